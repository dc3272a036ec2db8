"""Shared table and figure formatting: the store as a tidy frame, intervals, reference rows, deltas,
bold best, escaping, the three formats, figure files and colours. Suites build their tables and
figures on this (suites/<name>/tables.py); nothing here knows a suite."""
