"""Corpus: one body of data a family draws from, described for ``harness corpora`` and for
the recorded code version.

What for: the core lists the data every family ships, and hashes those files into the code
version of a campaign, without naming any of them; each family declares its own corpora in
its `Family` (``corpora=Deferred("myfamily.corpus:CORPORA")``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Corpus:
    """A data file (or a few) that decides a family's prompts or verdicts.

    ``name`` is how ``harness corpora`` lists it (unique across families: the file's path
    under its data folder, e.g. ``"myfamily/terms.csv"``); ``files`` are the files it is read
    from, hashed into the code version; ``describe`` counts what they hold, in one line
    (it reads the files: called only when the corpora are listed); ``provenance`` says where
    the facts in them come from (a document, e.g. ``"corpora/PROVENANCE.md"``).
    """

    name: str
    files: tuple[Path, ...]
    describe: Callable[[], str]
    provenance: str = ""
