"""`ccq-eval data fetch SUITE`: a suite's datasets into the data cache, on a machine with network access."""

from __future__ import annotations

from ccq_eval.errors import BadInput

NAME = "data"


def add(subparsers) -> None:
    from ccq_eval.suites import SUITES

    data = subparsers.add_parser(NAME, help="fetch datasets on a machine with network access")
    data.add_argument("action", choices=("fetch",))
    data.add_argument("suite", choices=[s.name for s in SUITES.values() if s.fetcher])
    data.add_argument("--corpora", help="comma list of corpora / LongBench keys (default: all)")


def handle(args) -> int:
    from ccq_eval.data.cache import check_cache_root
    from ccq_eval.suites import get_suite

    suite = get_suite(args.suite)
    known = suite.fetcher.names()
    corpora = args.corpora.split(",") if args.corpora else None
    unknown = [c for c in corpora or [] if c not in known]
    if unknown:
        raise BadInput(f"--corpora: unknown {', '.join(unknown)}; available: {', '.join(known)}")
    check_cache_root()
    for done in suite.fetcher.fetch(corpora):
        print(f"fetched {done}")
    return 0
