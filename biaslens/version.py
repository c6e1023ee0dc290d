"""The version of biaslens (a base module: imports nothing of biaslens). `biaslens.__version__` and model manifests read
it; `version_key` orders versions as versions (0.9.0 before 0.10.0), where text would not."""

import re

__version__ = "0.1.0"

_VERSION = re.compile(r"\s*v?(\d+(?:\.\d+)*)(.*)", re.DOTALL)


def version_key(version: object) -> tuple:
    """A key that sorts versions as versions: 0.9.0 < 0.10.0 < 1.0 == 1.0.0; a pre-release (0.10.0rc1, 0.10.0.dev0)
    before its release and a post-release or local one (0.10.0.post1, 0.10.0+cu121) after it; text that is no version
    (None, "") before every version."""
    found = _VERSION.match(str(version)) if version is not None else None
    if found is None:
        return (0, (), 0, "")
    parts = [int(p) for p in found.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    rest = found.group(2).strip()
    after = rest.startswith((".post", "post", "+", "-post")) or rest == ""
    return (1, tuple(parts), 1 if rest == "" else (2 if after else 0), rest)
