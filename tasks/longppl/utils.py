"""Thin shims: lm-eval calls these; the work is in ccq_eval.suites.longppl."""

from ccq_eval.suites.longppl.plugin import dataset_for_corpus, process_results, token_perplexity  # noqa: F401


def longppl_govreport(**metadata):
    return dataset_for_corpus("govreport", **metadata)


def longppl_qmsum(**metadata):
    return dataset_for_corpus("qmsum", **metadata)


def longppl_narrativeqa(**metadata):
    return dataset_for_corpus("narrativeqa", **metadata)


def longppl_qasper(**metadata):
    return dataset_for_corpus("qasper", **metadata)


def longppl_codeparrot(**metadata):
    return dataset_for_corpus("codeparrot", **metadata)


def longppl_pg19(**metadata):
    return dataset_for_corpus("pg19", **metadata)


def longppl_pydocs(**metadata):
    return dataset_for_corpus("pydocs", **metadata)


def longppl_pycode(**metadata):
    return dataset_for_corpus("pycode", **metadata)


def longppl_essays(**metadata):
    return dataset_for_corpus("essays", **metadata)
