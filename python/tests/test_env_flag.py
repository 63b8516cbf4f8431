# SPDX-License-Identifier: Apache-2.0
"""The Python tests read DEVCTX_* flags (DEVCTX_REQUIRE_GPU) by the library's own rule: the rule in
tests/support/devctx_env.py accepts and refuses exactly the words the library's env_flag does,
checked through a flag the library reads at every context creation (DEVCTX_CHECK)."""
import pytest

import devctx

import devctx_env  # on sys.path through conftest.py

WORDS = [*devctx_env.ON, *devctx_env.OFF, "TRUE", "Yes", "oN", "OFF", "No", "False",
         "", "2", "y", "n", "enable", "maybe", " 1", "1 ", "10", "-1", "true!", "tru"]


@pytest.mark.parametrize("word", WORDS)
def test_one_truthiness_rule(monkeypatch, word):
    monkeypatch.setenv("DEVCTX_CHECK", word)
    try:
        devctx_env.parse_flag("DEVCTX_CHECK", word)
        python_accepts = True
    except ValueError:
        python_accepts = False
    try:
        devctx.Context("cpu").synchronize()
        library_accepts = True
    except devctx.Error as e:
        assert "DEVCTX_CHECK" in str(e) and "is not a flag" in str(e)
        library_accepts = False
    assert python_accepts == library_accepts, f"DEVCTX_CHECK='{word}'"


def test_require_gpu_reads_the_flag_rule(monkeypatch):
    for word in ("1", "yes", "TRUE", "on"):
        monkeypatch.setenv("DEVCTX_REQUIRE_GPU", word)
        assert devctx_env.require_gpu()
    for word in ("", "0", "no", "off", "False"):
        monkeypatch.setenv("DEVCTX_REQUIRE_GPU", word)
        assert not devctx_env.require_gpu()
    monkeypatch.setenv("DEVCTX_REQUIRE_GPU", "sure")
    with pytest.raises(ValueError, match="DEVCTX_REQUIRE_GPU='sure' is not a flag"):
        devctx_env.require_gpu()
