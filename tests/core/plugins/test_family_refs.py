"""Families name their parts by reference (`harness.plugins.family_refs`): a command imports only
the parts it uses, the duplicate rule still holds, and a reference that does not lead to what it
declares is refused with the reference named."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import ClassVar

import pytest

from harness.plugins.family_refs import Deferred, Lazy
from harness.plugins.registry import Family, extra_family, registry
from harness.vocabulary.errors import RegistryError
from harness.vocabulary.relation import Ask, Case, RelationBase, Transcript, Verdict
from harness.vocabulary.simulation import SimHandler, SimRequest

HERE = __name__  # the module name pytest imported this file under


class Shout(RelationBase):
    name: ClassVar[str] = "refs.shout"
    family: ClassVar[str] = "refs"

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        return [Ask(thread="main", prompt="hi")]


def _never(req: SimRequest) -> str | None:
    return None


HANDLERS = (SimHandler("metaquerier.term_list", 1, _never),)  # a name metaquerier has


def test_a_part_by_reference_is_imported_on_first_use_and_kept() -> None:
    family = Family(name="refs", summary="", relations=(Lazy("refs.shout", f"{HERE}:Shout"),))
    with extra_family(family) as found:
        assert "refs.shout" in found.names("relation")
        assert found.get("relation", "refs.shout") is Shout
        assert found.get("relation", "refs.shout") is Shout
        assert found.entries("relation")[0].value is not None


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (Lazy("refs.other", f"{HERE}:Shout"), "is relation 'refs.shout' of family 'refs', not"),
        (Lazy("refs.shout", "no_such_module_here:Shout"), "no_such_module_here:Shout failed"),
        (Lazy("refs.shout", f"{HERE}:NoSuchClass"), "has no 'NoSuchClass'"),
        (Lazy("refs.shout", "Shout"), "is not of the form 'package.module:attribute'"),
    ],
)
def test_a_reference_that_does_not_lead_to_its_part_is_refused(ref: Lazy, message: str) -> None:
    family = Family(name="refs", summary="", relations=(ref,))
    with extra_family(family) as found, pytest.raises(RegistryError, match=message) as info:
        found.get("relation", ref.name)
    assert "family 'refs'" in str(info.value)  # where the reference came from


def test_a_relation_of_another_family_by_reference_is_refused() -> None:
    family = Family(name="other", summary="", relations=(Lazy("refs.shout", f"{HERE}:Shout"),))
    with extra_family(family) as found, pytest.raises(RegistryError, match="of family 'refs'"):
        found.get("relation", "refs.shout")


def test_a_deferred_name_taken_by_another_family_fails_when_its_kind_is_listed() -> None:
    family = Family(name="refs", summary="", sim_handlers=Deferred(f"{HERE}:HANDLERS"))
    with extra_family(family, origin="tests.refs") as found, pytest.raises(RegistryError) as info:
        found.entries("sim handler")
    message = str(info.value)
    assert "sim handler 'metaquerier.term_list' is registered twice" in message
    assert "tests.refs" in message and "relations.metaquerier" in message


def test_a_name_by_reference_meets_the_duplicate_rule_at_registration() -> None:
    family = Family(name="refs", summary="", commands=(Lazy("run", f"{HERE}:Shout"),))
    with (
        pytest.raises(RegistryError, match="command 'run' is registered twice"),
        extra_family(family),
    ):
        pass


def test_every_built_in_reference_leads_to_the_part_it_declares() -> None:
    found = registry()
    for kind in (
        "relation",
        "command",
        "importer",
        "model backend",
        "judge rubric",
        "report section",
        "sim handler",
        "sim option",
    ):
        entries = found.entries(kind)  # raises RegistryError on any mismatch
        assert entries and all(not isinstance(e.value, Lazy) for e in entries), kind


_PROBE = textwrap.dedent(
    """
    import sys
    from harness.cli import main
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    families = sorted({
        m.split(".")[1] for m in sys.modules if m.startswith("relations.") and m.count(".") >= 2
    })
    print("FAMILIES", " ".join(families), "EXIT", code)
    """
)


def _families_imported(*args: str) -> tuple[list[str], str]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, check=True
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("FAMILIES"))
    words = line.split()
    return words[1 : words.index("EXIT")], words[-1]


def test_a_command_imports_only_the_families_it_uses(tmp_path: Path) -> None:
    campaign = tmp_path / "mq.toml"
    campaign.write_text(
        'name = "mq"\nseed = 1\n[[models]]\nname = "sim:planted"\n'
        '[[relations]]\nname = "metaquerier.mr1"\ncases = 3\n',
        encoding="utf-8",
    )
    db = tmp_path / "mq.db"
    families, code = _families_imported("run", str(campaign), "--db", str(db), "--no-report")
    assert code in ("0", "None"), families
    # sim: models consult every family's answer rules, so `run` on sim imports those.
    assert "metaquerier" in families
    families, code = _families_imported("replay", str(db), "--verify")
    assert code in ("0", "None")
    # Only the campaign's own family (and the code families share) is imported.
    assert set(families) <= {"metaquerier", "_common"}, families
    families, _ = _families_imported("relations")
    assert {"badf", "biaslens", "langbite", "metafair", "metaquerier"} <= set(families)


def test_a_family_package_still_hands_out_its_classes_on_first_use() -> None:
    from relations.langbite import LangBiTe
    from relations.langbite.relations import LangBiTe as Defined
    from relations.metaquerier import TermDeletion
    from relations.metaquerier.relations import TermDeletion as Where

    assert LangBiTe is Defined and TermDeletion is Where
    from relations.badf import significance  # a submodule is still a submodule

    assert significance.__name__ == "relations.badf.significance"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        import relations.badf

        relations.badf.Nope  # noqa: B018


def test_threads_listing_a_kind_being_imported_all_see_every_part(tmp_path: Path) -> None:
    # A server answering in threads (the counting vendor of the kill test) builds a sim
    # model per request: a thread must never see the handlers registered so far only.
    module = tmp_path / "slow_refs_handlers.py"
    module.write_text(
        "import time\n"
        "from harness.vocabulary.simulation import SimHandler\n"
        "time.sleep(0.3)\n"
        "HANDLERS = (SimHandler('slowrefs.echo', 1, lambda req: None),)\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(tmp_path))
    try:
        family = Family(
            name="slowrefs", summary="", sim_handlers=Deferred("slow_refs_handlers:HANDLERS")
        )
        with extra_family(family) as found:
            seen: list[list[str]] = []
            barrier = threading.Barrier(6)

            def list_handlers() -> None:
                barrier.wait()
                seen.append([e.name for e in found.entries("sim handler")])

            threads = [threading.Thread(target=list_handlers) for _ in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert len(seen) == 6
        assert all("slowrefs.echo" in names for names in seen), seen
        assert all(names == seen[0] for names in seen)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("slow_refs_handlers", None)
