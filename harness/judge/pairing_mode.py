"""The pairing modes a user may choose (the gate's `pairing` option): a module of its own so that building the
command line does not import pandas with `harness.judge.pairing`."""

from __future__ import annotations

from typing import Literal

# auto: the judge decides (harness.judge.pairing.decide_pairing); paired: match by id, unchecked; unpaired: never
PairingMode = Literal["auto", "paired", "unpaired"]
