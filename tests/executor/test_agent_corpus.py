"""The corpus of ordinary agent code (tests/executor/agent_corpus.py): every snippet
ends ok in its profile, printing what it is expected to print, with every sandbox layer on."""
import base64

import pytest

from agent_corpus import CORPUS as STDLIB
from agent_corpus_ds import CORPUS_DS
from harness import Executor

CORPUS = STDLIB + CORPUS_DS


@pytest.fixture(scope="module")
def farm():
    ex = Executor(slots=2, profiles="python.basic,python.filesystem,python.data_science")
    yield ex
    ex.close()


def _files(files):
    return {path: base64.b64decode(v["b64"]) if isinstance(v, dict) else v
            for path, v in (files or {}).items()}


def test_the_corpus_is_big_enough():
    assert len(CORPUS) >= 60
    assert len({c["name"] for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_ordinary_code_runs(farm, case):
    r = farm.run(case["code"], service=case["profile"], files=_files(case.get("files")),
                 wall_ms=60000, timeout=120)
    assert r["status"] == "ok", (r["status"], r.get("error"), r.get("exit"), r["stderr"][-2000:])
    expect = case["expect"]
    for needle in (expect,) if isinstance(expect, str) else expect:
        assert needle in r["stdout"], (needle, r["stdout"][-3000:])
