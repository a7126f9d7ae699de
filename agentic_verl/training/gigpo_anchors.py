"""What the agent loops record for GiGPO (`training/gigpo.py`): one anchor-state digest per policy turn, under
`ANCHORS_FIELD` in their extra_fields. The first turn starts from the prompt, which every trajectory of a group
shares (`START`); a later turn's digest is the loop's own account of the environment's state (`anchor_digest`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

ANCHORS_FIELD = "gigpo_anchors"
START = "start"


def anchor_digest(*parts: Any) -> str:
    """A short stable digest of a state (its JSON, keys sorted).

    >>> anchor_digest(["turn", 1]) == anchor_digest(["turn", 1]) != anchor_digest(["turn", 2])
    True
    """
    text = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha1(text.encode()).hexdigest()[:16]
