# SPDX-License-Identifier: Apache-2.0
"""tests/support/devctx_env.py - the Python tests' reading of DEVCTX_* flags (DEVCTX_REQUIRE_GPU,
DEVCTX_REQUIRE_JSONSCHEMA), by the library's own rule (src/core/environment.cpp, env_flag): unset
or empty -> the fallback; 1, true, yes, on -> True; 0, false, no, off -> False (any letter case);
anything else is an error naming the variable and the value, never a silent "off".
python/tests/test_env_flag.py checks that this rule and the library's accept the same words."""
import os

ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")


def parse_flag(name: str, text, fallback: bool = False) -> bool:
    """The value of flag `name` whose text is `text` (None: unset). Raises ValueError."""
    if text is None or text == "":
        return fallback
    if text.lower() in ON:
        return True
    if text.lower() in OFF:
        return False
    raise ValueError(f"{name}='{text}' is not a flag: use 1, true, yes or on to enable it and 0, false, no "
                     "or off to disable it (or leave it unset)")


def env_flag(name: str, fallback: bool = False) -> bool:
    """The flag `name` from the environment (parse_flag)."""
    return parse_flag(name, os.environ.get(name), fallback)


def require_gpu() -> bool:
    """DEVCTX_REQUIRE_GPU: a missing GPU fails a GPU test instead of skipping it."""
    return env_flag("DEVCTX_REQUIRE_GPU")
