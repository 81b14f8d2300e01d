"""``same_weights.py``'s cases as the tests of a ``pytest --gradscope`` session.

``python same_weights_pytest.py OUT [CASE...]`` runs pytest with ``--gradscope`` on this file:
each case is a test, watched by gradscope's pytest plugin, writing ``OUT/CASE.npz`` as
``same_weights.py`` does (a case whose watch finds a problem fails as a test; its weights are
written all the same).
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    import pytest

    sys.argv[:] = [sys.argv[0].replace("_pytest", ""), *sys.argv[1:]]  # what same_weights reads
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--gradscope", __file__]))

import pytest
import same_weights


@pytest.mark.parametrize("case", same_weights.CHOSEN or list(same_weights.CASES))
def test_case(case: str) -> None:
    same_weights.run(case)
