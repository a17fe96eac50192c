"""Roles in action sets: every bundled action declares what it does, a declared role is checked against the
action's effects, and a robot's set is its base set with some actions left out (`extends` + `without`), an action
under a base's name changing only the keys it gives."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from sayplan_core.sim.action_set import ActionSetError, action_set_from_dict, builtin_action_sets, load_action_set
from sayplan_core.sim.roles import RELATIONS, ROLES


def effects_oracle(role: str, effects: list[tuple[str, Any]]) -> bool:
    """The role table written out by hand from sim/predicates.py's effects (independent of Role.played_by)."""
    wanted = {
        "navigate": [("move_agent", None)],
        "access": [("set_accessed", None)],
        "open": [("set_state", "open")],
        "close": [("set_state", "closed")],
        "switch_on": [("set_state", "on")],
        "switch_off": [("set_state", "off")],
        "pick": [("grasp", None)],
        "place": [("place_held", None)],
        "put": [("place_held", "ontop_of"), ("place_held", "inside_of")],
        "look": [("reveal", "ontop_of"), ("reveal", "inside_of")],
        "finish": [("finish", None)],
    }[role]
    return any(effect in wanted for effect in effects)


def test_every_bundled_action_declares_a_role_its_effects_play() -> None:
    for name in builtin_action_sets():
        for action, spec in load_action_set(name).actions.items():
            effects = [(c.name, c.arg) for c in spec.effects]
            assert spec.role, f"{name}.{action} declares no role"
            assert effects_oracle(spec.role, effects), (name, action, spec.role, effects)


@pytest.mark.parametrize("role", sorted(ROLES))
def test_a_role_is_taken_only_with_exactly_its_effect(role: str) -> None:
    """A robot runs the role's program only, so every other effect would be a change the graph records and the
    robot never makes (found by a hostile review: an access that also set the fridge open)."""
    cases: list[list[Any]] = [
        [{"set_state": "on"}],
        ["grasp"],
        ["finish"],
        [{"reveal": "inside_of"}],
        ["set_accessed"],
        ["set_accessed", {"set_state": "open"}],
        ["grasp", "finish"],
    ]
    for effects in cases:
        data = {"name": "x", "actions": {"act": {"role": role, "targets": [], "effects": effects}}}
        parsed = [(e, None) if isinstance(e, str) else next(iter(e.items())) for e in effects]
        if len(parsed) == 1 and effects_oracle(role, parsed):
            assert action_set_from_dict(data).role("act") == role
        else:
            with pytest.raises(ActionSetError, match=f"action 'act': role '{role}' needs the one effect"):
                action_set_from_dict(data)
    with pytest.raises(ActionSetError, match="action 'act': no effects"):
        action_set_from_dict({"name": "x", "actions": {"act": {"role": role, "targets": [], "effects": []}}})


def test_roles_that_feedback_names_are_played_once_others_by_many() -> None:
    twice = {
        "go": {"role": "navigate", "targets": ["room"], "affordance": None, "effects": ["move_agent"]},
        "walk": {"role": "navigate", "targets": ["room"], "affordance": None, "effects": ["move_agent"]},
    }
    with pytest.raises(ActionSetError, match="role 'navigate' is played by both go and walk"):
        action_set_from_dict({"name": "x", "actions": twice})
    lpg = load_action_set("lookplangraph")
    assert [a for a, spec in lpg.actions.items() if spec.role == "put"] == ["put_on", "put_inside"]
    assert lpg.verb("put") == "put_on" and lpg.role("put_inside") == "put"
    assert [lpg.actions[a].relation for a in ("put_on", "put_inside", "look_on", "look_inside")] == [
        "ontop_of",
        "inside_of",
        "ontop_of",
        "inside_of",
    ]
    assert set(RELATIONS) == {"ontop_of", "inside_of"}


def test_the_spot_sets_are_their_bases_without_the_switches_and_with_spots_descriptions() -> None:
    for robot, base in (("spot", "sayplan"), ("spot_lookplangraph", "lookplangraph")):
        ours, theirs = load_action_set(robot), load_action_set(base)
        assert ours.names() == [n for n in theirs.names() if n not in ("turn_on", "turn_off")]
        assert (ours.on_repeat, ours.auto_insert) == (theirs.on_repeat, theirs.auto_insert)
        for name in ours.names():
            mine, base_spec = ours.actions[name], theirs.actions[name]
            # everything but the description is the base's: the simulator checks Spot's plans as the planner's
            assert dataclasses.replace(mine, description=base_spec.description) == base_spec, name


def test_without_and_partial_entries_are_checked() -> None:
    with pytest.raises(ActionSetError, match="without: sayplan has no action fly"):
        action_set_from_dict({"name": "x", "extends": "sayplan", "without": ["fly"]})
    with pytest.raises(ActionSetError, match="'without' drops actions of the set it extends; add 'extends'"):
        action_set_from_dict({"name": "x", "without": ["goto"], "actions": {}})
    with pytest.raises(ActionSetError, match="without must be a name or a list of names"):
        action_set_from_dict({"name": "x", "extends": "sayplan", "without": [3]})
    renamed = action_set_from_dict(
        {"name": "x", "extends": "sayplan", "actions": {"goto": {"description": "Drive there."}}}
    )
    base = load_action_set("sayplan").actions["goto"]
    assert renamed.actions["goto"] == dataclasses.replace(base, description="Drive there.")
    # a partial entry under a new name is a whole action, checked as one
    with pytest.raises(ActionSetError, match=r"action 'fly': no effects \(an action that changes nothing"):
        action_set_from_dict({"name": "x", "extends": "sayplan", "actions": {"fly": {"role": "navigate"}}})
    # found by a hostile review: a typo of a base name gave the LLM a verb that did nothing; a blank key dropped
    # the base's preconditions; a name both dropped and given
    with pytest.raises(ActionSetError, match=r"action 'pick_up': no effects"):
        action_set_from_dict({"name": "x", "extends": "sayplan", "actions": {"pick_up": {"description": "Take."}}})
    blank = {"name": "x", "extends": "spot", "actions": {"pickup": {"preconditions": None}}}
    with pytest.raises(ActionSetError, match=r"action 'pickup': preconditions left blank \(give a value\)"):
        action_set_from_dict(blank)
    both = {"name": "x", "extends": "sayplan", "without": ["pickup"], "actions": {"pickup": {"description": "x"}}}
    with pytest.raises(ActionSetError, match="pickup both dropped \\(without\\) and given \\(actions\\)"):
        action_set_from_dict(both)
    with pytest.raises(ActionSetError, match=r"unknown role \['pick'\]"):
        action_set_from_dict({"name": "x", "actions": {"a": {"role": ["pick"], "effects": ["grasp"]}}})


def test_a_robot_names_the_actions_it_has_no_program_for() -> None:
    sayplan = load_action_set("sayplan")
    spot_roles = ("navigate", "access", "pick", "place", "put", "open", "close", "look", "finish")
    assert sayplan.without_program(spot_roles) == ["turn_on (switch_on)", "turn_off (switch_off)"]
    assert load_action_set("spot").without_program(spot_roles) == []
    plain = action_set_from_dict({"name": "x", "actions": {"wave": {"targets": [], "effects": ["finish"]}}})
    assert plain.without_program(spot_roles) == ["wave (no role)"]


def test_an_action_set_file_changed_on_disk_is_read_again(tmp_path: Path) -> None:
    """Found by a hostile review: the loader's cache kept a file's first contents, so a robot configured again
    after its set was fixed still ran the old one."""
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nextends: sayplan\nwithout: [turn_on]\n", encoding="utf-8")
    assert "turn_on" not in load_action_set(str(path)).names()
    assert load_action_set(str(path)) is load_action_set(str(path))  # unchanged: read once
    path.write_text("name: mine\nextends: sayplan\nwithout: [turn_off, close]\n", encoding="utf-8")
    names = load_action_set(str(path)).names()
    assert "turn_on" in names and "turn_off" not in names and "close" not in names


def test_a_file_is_named_by_its_stem_and_never_by_a_bundled_sets_name(tmp_path: Path) -> None:
    """A set goes by its name in messages (DescribeSkills, PlanTask) and in the graph server's table: a file without
    one was named by its host path, and one named like a bundled set took its place there."""
    path = tmp_path / "my_robot.yaml"
    path.write_text("extends: sayplan\nwithout: [turn_on]\n", encoding="utf-8")
    assert load_action_set(str(path)).name == "my_robot"
    for bundled in builtin_action_sets():
        path.write_text(f"name: {bundled}\nextends: sayplan\nwithout: [turn_off]\n", encoding="utf-8")
        with pytest.raises(ActionSetError, match=f"name '{bundled}' is a bundled action set's"):
            load_action_set(str(path))


def test_the_example_in_the_reference_loads_and_adds_one_verb() -> None:
    import re
    from pathlib import Path

    import yaml

    page = (Path(__file__).parents[2] / "docs" / "reference" / "action_sets.md").read_text(encoding="utf-8")
    example = yaml.safe_load(re.search(r"```yaml\n(.*?)```", page, re.S).group(1))  # type: ignore[union-attr]
    mine, base = action_set_from_dict(example), load_action_set("sayplan")
    assert set(mine.names()) == set(base.names()) - {"turn_on", "turn_off"} | {"grab"}
    assert mine.role("grab") == "pick" and mine.actions["goto"].description == "Drive to a room or pose node."
