"""Spot's robot-independent logic: the site file, skill -> primitive programs, geometry, and the scene-graph
update a finished skill reports (sayplan_spot.programs; no SDK needed)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sayplan_core.envs import load_env
from sayplan_core.envs.tasks import load_tasks
from sayplan_core.graph.model import Node
from sayplan_core.graph.updates import apply_update
from sayplan_core.outcomes import SkillCode
from sayplan_core.robots.navigation import TargetError
from sayplan_core.settings import robot_settings
from sayplan_core.sim import check_goals, goal_from_dict
from sayplan_core.sim.action_set import load_action_set
from sayplan_core.sim.plan import PlanStep
from sayplan_spot.programs import (
    GRIPPER_ATTRIBUTE,
    SPOT_ROLES,
    Approach,
    Articulate,
    Capture,
    Grasp,
    Navigate,
    Place,
    RobotPose,
    SpotBelief,
    SpotOptions,
    SpotSite,
    Walk,
    WorldObjectRef,
    approach_pose,
    compile_skill,
    hand_refusal,
    nearest_place,
    resolve_waypoint,
    skill_update,
)

ROOT = Path(__file__).resolve().parents[2]
OFFICE = load_env("office")
SPOT = load_action_set("spot")
SPOT_LPG = load_action_set("spot_lookplangraph")
OPTIONS = SpotOptions(standoff_m=0.8, place_height_m=0.8, image_source="hand_color_image")
SITE = SpotSite.from_dict(
    {
        "frame": "map",
        "nodes": {
            "kitchen": {"target": "kitchen-door"},
            "nikos_desk": {"pose": [41.0, 4.0, 90]},
            "coffee_mug": {"target": "kitchen-door"},
        },
        "spot": {
            "handles": {"kitchen_cupboard": {"position": [54.4, -3.3, 0.9], "kind": "hinge", "pull": [0, 2]}},
            "places": {"fridge": [55.8, -3.5, 0.6]},
            "objects": {"coffee_mug": {"fiducial": 7}, "orange": {"world_object": "orange_det"}},
        },
    }
)

SPOT_SETTINGS = robot_settings("spot")


def step(action: str, target: str = "") -> PlanStep:
    return PlanStep(action, target)


# ----------------------------------------------------------------------------- the site file
def test_site_file_binds_nodes_handles_and_places(tmp_path: Path) -> None:
    handle = SITE.handles["kitchen_cupboard"]
    assert handle.kind == "hinge" and handle.opening == pytest.approx(math.pi / 2)  # default 90 degrees
    assert handle.pull == (0.0, 1.0)  # normalised
    assert SITE.places["fridge"] == (55.8, -3.5, 0.6)
    assert SITE.binding.entries["kitchen"].name == "kitchen-door"
    assert SITE.check_against(OFFICE) == []
    path = tmp_path / "site.yaml"
    path.write_text("frame: map\nnodes:\n  kitchen: {target: wp-1}\nspot:\n  places:\n    atlantis: [0, 0, 1]\n")
    assert SpotSite.load(path).check_against(OFFICE) == ["atlantis"]
    (tmp_path / "empty.yaml").write_text("")
    assert SpotSite.load(tmp_path / "empty.yaml") == SpotSite()
    with pytest.raises(ValueError, match="cannot read site file"):
        SpotSite.load(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("spot", "message"),
    [
        ({"handles": {"cupboard": {"position": [0, 0, 1], "kind": "lever", "pull": [1, 0]}}}, "kind must be one of"),
        ({"handles": {"cupboard": {"position": [0, 0, 1], "kind": "hinge", "pull": [0, 0]}}}, "pull must not be zero"),
        (
            {"handles": {"cupboard": {"position": [0, 0], "kind": "drawer", "pull": [1, 0]}}},
            "position must be [x, y, z]",
        ),
        (
            {"handles": {"cupboard": {"position": [0, 0, 1], "kind": "hinge", "opening": 270, "pull": [1, 0]}}},
            "at most 180",
        ),
        (
            {"handles": {"cupboard": {"position": [0, 0, 1], "kind": "drawer", "opening": -1, "pull": [1, 0]}}},
            "positive",
        ),
        (
            {"handles": {"cupboard": {"position": [0, 0, 1], "kind": "drawer", "pull": [1, 0], "colour": 1}}},
            "holds position",
        ),
        ({"places": {"desk": [1, 2, float("nan")]}}, "spot.places.desk must be [x, y, z]"),
        ({"doors": {}}, "'spot' holds 'handles', 'places' and/or 'objects'"),
        ({"objects": {"mug": {"fiducial": 5, "world_object": "m"}}}, "spot.objects.mug holds one of fiducial"),
        ({"objects": {"mug": {"tag": 5}}}, "spot.objects.mug holds one of fiducial"),
        ({"objects": {"mug": {"fiducial": "5"}}}, "spot.objects.mug.fiducial must be an AprilTag id"),
        ({"objects": {"mug": {"fiducial": True}}}, "spot.objects.mug.fiducial must be an AprilTag id"),
        ({"objects": {"mug": {"world_object": " "}}}, "spot.objects.mug.world_object must be a non-empty"),
        ({"objects": ["mug"]}, "spot.objects are mappings"),
    ],
)
def test_a_bad_site_file_names_what_is_wrong(spot: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=r"site\.yaml") as caught:
        SpotSite.from_dict({"nodes": {}, "spot": spot}, "site.yaml")
    assert message in str(caught.value)


def test_config_files_set_only_declared_spot_settings_with_valid_values() -> None:
    found = {}
    for path in sorted((ROOT / "config").rglob("*.yaml")):
        body = (yaml.safe_load(path.read_text()) or {}).get("spot_skill_server")
        if body is not None:
            values = body["ros__parameters"]
            found[path.stem] = SPOT_SETTINGS.check(values)  # unknown keys and bad values raise
            assert all(SPOT_SETTINGS[key].description for key in values)
            assert not {"username", "password"} & set(values)
    assert found["spot"]["action_set"] == "spot" and found["lookplangraph"]["action_set"] == "spot_lookplangraph"


def test_the_binding_rules_still_apply_inside_a_spot_site() -> None:
    with pytest.raises(ValueError, match="node 'kitchen' needs 'target'"):
        SpotSite.from_dict({"nodes": {"kitchen": {"waypoint": "x"}}}, "site.yaml")


# ----------------------------------------------------------------------------- programs
def test_every_spot_action_has_a_program() -> None:
    for name in ("spot", "spot_lookplangraph"):
        actions = load_action_set(name)
        assert {spec.role for spec in actions.actions.values()} <= set(SPOT_ROLES), name


def test_spot_sets_are_subsets_of_the_sets_planners_write() -> None:
    """So every sayplan-family planner (and lookplangraph) plans for Spot; turn_on/turn_off are not in them."""
    assert set(SPOT.names()) <= set(load_action_set("sayplan").names())
    assert set(load_action_set("spot_lookplangraph").names()) <= set(load_action_set("lookplangraph").names())
    for name in ("spot", "spot_lookplangraph"):
        assert not {"turn_on", "turn_off"} & set(load_action_set(name).names())


def test_goto_uses_the_bound_waypoint_else_walks_to_the_graph_position() -> None:
    assert compile_skill(step("goto", "kitchen"), OFFICE, SITE, None, OPTIONS, SPOT).primitives == (
        Navigate("kitchen", "kitchen-door"),
    )
    position = OFFICE.nodes["pose8"].position
    assert position is not None
    assert compile_skill(step("goto", "pose8"), OFFICE, SITE, None, OPTIONS, SPOT).primitives == (
        Walk("pose8", (position[0], position[1], 0.0)),
    )


def test_access_stands_at_the_bound_pose_or_comes_up_to_the_asset() -> None:
    desk = compile_skill(step("access", "nikos_desk"), OFFICE, SITE, None, OPTIONS, SPOT).primitives
    assert desk == (Walk("nikos_desk", (41.0, 4.0, math.pi / 2)),)
    bench = compile_skill(step("access", "kitchen_bench"), OFFICE, SITE, None, OPTIONS, SPOT).primitives
    assert bench == (Approach("kitchen_bench", (56.5, -5.0), 0.8),)


def test_pickup_grasps_at_the_object_and_names_its_world_object() -> None:
    """spot.objects binds an object to a live world object (an AprilTag id, or a world object's name); a node's
    `target` is a GraphNav waypoint, never a world object."""
    assert SITE.objects == {"coffee_mug": WorldObjectRef(fiducial=7), "orange": WorldObjectRef(name="orange_det")}
    program = compile_skill(step("pickup", "coffee_mug"), OFFICE, SITE, "kitchen_cupboard", OPTIONS, SPOT)
    assert program.primitives == (Grasp("coffee_mug", (54.468, -3.597, 0.8), WorldObjectRef(fiducial=7)),)
    orange = compile_skill(step("pickup", "orange"), OFFICE, SITE, "kitchen_bench", OPTIONS, SPOT).primitives
    assert orange == (Grasp("orange", (56.5, -5.0, 0.8), WorldObjectRef(name="orange_det")),)
    banana = compile_skill(step("pickup", "banana1"), OFFICE, SITE, None, OPTIONS, SPOT).primitives
    # nothing accessed: it walks up to the banana first (what grasps is the step, not the set's verbs)
    assert len(banana) == 2 and isinstance(banana[1], Grasp) and banana[1].world_object is None
    waypoint_only = SpotSite.from_dict({"nodes": {"coffee_mug": {"target": "mug_tag"}}})
    grasp = compile_skill(step("pickup", "coffee_mug"), OFFICE, waypoint_only, "kitchen_cupboard", OPTIONS, SPOT)
    assert grasp.primitives == (Grasp("coffee_mug", (54.468, -3.597, 0.8), None),)
    assert WorldObjectRef(fiducial=7).describe() == "fiducial 7"


def test_release_puts_down_at_the_accessed_asset() -> None:
    at_fridge = compile_skill(step("release", "orange"), OFFICE, SITE, "fridge", OPTIONS, SPOT).primitives
    assert at_fridge == (Place("fridge", (55.8, -3.5, 0.6)),)  # the site's place
    at_bench = compile_skill(step("release", "orange"), OFFICE, SITE, "kitchen_bench", OPTIONS, SPOT).primitives
    assert at_bench == (Place("kitchen_bench", (56.5, -5.0, 0.8)),)  # position + place_height_m
    with pytest.raises(TargetError, match="needs an accessed asset"):
        compile_skill(step("release", "orange"), OFFICE, SITE, None, OPTIONS, SPOT)


def test_open_walks_to_the_handle_and_pulls_it() -> None:
    program = compile_skill(step("open", "kitchen_cupboard"), OFFICE, SITE, None, OPTIONS, SPOT)
    walk, pull = program.primitives
    handle = SITE.handles["kitchen_cupboard"]
    assert isinstance(walk, Walk) and walk.pose == pytest.approx((54.4, -3.3 + 0.8, -math.pi / 2))
    assert pull == Articulate("kitchen_cupboard", handle, True)
    close = compile_skill(step("close", "kitchen_cupboard"), OFFICE, SITE, None, OPTIONS, SPOT).primitives[1]
    assert close == Articulate("kitchen_cupboard", handle, False)
    with pytest.raises(TargetError, match="needs the handle of fridge in the site file"):
        compile_skill(step("open", "fridge"), OFFICE, SITE, None, OPTIONS, SPOT)


def test_look_inside_comes_up_and_captures_the_hand_camera() -> None:
    program = compile_skill(step("look_inside", "fridge"), OFFICE, SITE, None, OPTIONS, SPOT_LPG)
    assert program.primitives[-1] == Capture("fridge", "hand_color_image", "inside_of")
    assert (
        compile_skill(step("look_on", "kitchen_bench"), OFFICE, SITE, None, OPTIONS, SPOT_LPG).primitives[-1].relation
        == "ontop_of"
    )  # type: ignore[union-attr]


def test_steps_spot_cannot_ground_are_refused() -> None:
    assert compile_skill(step("done"), OFFICE, SITE, None, OPTIONS, SPOT).primitives == ()
    with pytest.raises(TargetError, match="no program for 'turn_on'"):
        compile_skill(step("turn_on", "coffee_machine"), OFFICE, SITE, None, OPTIONS, SPOT)
    with pytest.raises(TargetError, match="'atlantis' is not in the scene graph"):
        compile_skill(step("goto", "atlantis"), OFFICE, SITE, None, OPTIONS, SPOT)
    with pytest.raises(TargetError, match="agent' has no position"):
        compile_skill(step("access", "agent"), OFFICE, SITE, None, OPTIONS, SPOT)


# ----------------------------------------------------------------------------- geometry
coordinate = st.floats(-50, 50, allow_nan=False)


@given(coordinate, coordinate, coordinate, coordinate, st.floats(0.3, 3.0))
def test_approach_pose_stands_standoff_away_facing_the_point(
    rx: float, ry: float, px: float, py: float, standoff: float
) -> None:
    x, y, heading = approach_pose((rx, ry), (px, py), standoff)
    distance = math.hypot(px - rx, py - ry)
    if distance <= standoff:
        assert (x, y) == (rx, ry)  # close enough already: only turn
    else:
        assert math.hypot(px - x, py - y) == pytest.approx(standoff, abs=1e-6)
        # on the way from the robot to the point, and facing it
        assert math.hypot(x - rx, y - ry) + standoff == pytest.approx(distance, abs=1e-6)
        assert math.cos(heading) * (px - x) + math.sin(heading) * (py - y) == pytest.approx(standoff, abs=1e-6)


def test_waypoint_names_resolve_to_ids() -> None:
    waypoints = {"wp-1": "kitchen", "wp-2": "lab", "wp-3": "lab", "wp-4": ""}
    assert resolve_waypoint("wp-4", waypoints) == "wp-4"
    assert resolve_waypoint("kitchen", waypoints) == "wp-1"
    with pytest.raises(TargetError, match="ambiguous"):
        resolve_waypoint("lab", waypoints)
    with pytest.raises(TargetError, match="no waypoint 'atlantis'"):
        resolve_waypoint("atlantis", waypoints)


def test_nearest_place_is_the_closest_room_or_pose() -> None:
    def brute(x: float, y: float) -> str:
        places = [n for n in OFFICE.iter_nodes("room", "pose") if n.position is not None]
        return min(places, key=lambda n: (math.hypot(n.position[0] - x, n.position[1] - y), n.id)).id  # type: ignore[index]

    for x, y in [(35.2, 0.1), (54.0, -4.0), (41.0, 5.5), (-100.0, -100.0)]:
        assert nearest_place(OFFICE, x, y) == brute(x, y)
    assert nearest_place(OFFICE, 35.2, 0.1) == "pose8"


# ----------------------------------------------------------------------------- what a skill tells the graph
def held_by_agent(graph: object, node: str) -> bool:
    return (
        OFFICE.agent_id is not None and graph.parent(node) == graph.agent_id and graph.relation(node) == "inside_hand"
    )  # type: ignore[attr-defined]


def test_a_successful_plan_reported_skill_by_skill_meets_the_task_goal() -> None:
    """office-lh-05 (the demo instruction): the task file's reference plan without the steps Spot lacks, each step
    reported as the robot would; the task's own goal predicate is the oracle."""
    task = next(t for t in load_tasks() if t.id == "office-lh-05")
    plan = [s for s in task.reference_plan if s.action not in ("turn_on", "turn_off")]
    assert {s.action for s in plan} <= set(SPOT.names()) and len(plan) == len(task.reference_plan) - 2
    graph, belief = OFFICE, SpotBelief()
    assert not check_goals(graph, task.predicates).success
    for item in plan:
        pose = RobotPose(1.0, 2.0, 0.5, 0.0, "wp-x")
        update = skill_update(graph, item, SPOT, belief, SkillCode.NONE, pose, placed_at=(41.2, 4.7, 0.85))
        graph = apply_update(graph, update)
        if item.action == "pickup":
            assert held_by_agent(graph, "coffee_mug")
    assert check_goals(graph, task.predicates).success
    assert graph.nodes["kitchen_cupboard"].states == ("open",)
    assert graph.nodes["coffee_mug"].position == (41.2, 4.7, 0.85)
    agent = graph.nodes[graph.agent_id or ""]
    assert agent.position == (1.0, 2.0, 0.0) and agent.attributes["location"] == "nikos_office"
    assert agent.attributes["waypoint"] == "wp-x"


def test_release_into_an_open_container_puts_it_inside() -> None:
    graph = apply_update(OFFICE, skill_update(OFFICE, step("open", "fridge"), SPOT, SpotBelief(), SkillCode.NONE, None))
    belief = SpotBelief()
    graph = apply_update(graph, skill_update(graph, step("access", "fridge"), SPOT, belief, SkillCode.NONE, None))
    assert belief.accessed == "fridge"
    graph = apply_update(
        graph, skill_update(graph, step("access", "kitchen_bench"), SPOT, SpotBelief(), SkillCode.NONE, None)
    )
    graph = apply_update(
        graph, skill_update(graph, step("pickup", "orange"), SPOT, SpotBelief("kitchen_bench"), SkillCode.NONE, None)
    )
    graph = apply_update(graph, skill_update(graph, step("release", "orange"), SPOT, belief, SkillCode.NONE, None))
    inside = goal_from_dict({"kind": "placed", "node": "orange", "relation": "inside_of", "target": "fridge"})
    assert check_goals(graph, [inside]).success


def test_a_navigation_that_stopped_on_the_way_reports_where_the_robot_is() -> None:
    belief = SpotBelief("kitchen_bench")
    pose = RobotPose(35.2, 0.1, 0.0, 0.0, "wp-unbound")
    update = skill_update(OFFICE, step("goto", "kitchen"), SPOT, belief, SkillCode.BLOCKED, pose, moved_off_course=True)
    graph = apply_update(OFFICE, update)
    assert graph.agent_location() == "pose8" and belief.accessed is None
    bound = skill_update(
        OFFICE, step("goto", "kitchen"), SPOT, SpotBelief(), SkillCode.BLOCKED, pose, True, {"wp-unbound": "pose12"}
    )
    assert apply_update(OFFICE, bound).agent_location() == "pose12"
    not_a_place = skill_update(
        OFFICE, step("goto", "kitchen"), SPOT, SpotBelief(), SkillCode.BLOCKED, pose, True, {"wp-unbound": "fridge"}
    )
    assert apply_update(OFFICE, not_a_place).agent_location() == "pose8"  # a waypoint bound to an asset is no place


def test_a_failed_grasp_changes_nothing_but_a_missing_object_is_forgotten() -> None:
    failed = skill_update(
        OFFICE, step("pickup", "coffee_mug"), SPOT, SpotBelief("kitchen_cupboard"), SkillCode.GRASP_FAILED, None
    )
    graph = apply_update(OFFICE, failed)
    assert graph.parent("coffee_mug") == "kitchen_cupboard" and [u.node.type for u in failed.upsert] == ["agent"]
    missing = skill_update(
        OFFICE, step("pickup", "coffee_mug"), SPOT, SpotBelief("kitchen_cupboard"), SkillCode.NOT_FOUND, None,
        missing=True,
    )  # fmt: skip
    assert missing.remove == ["coffee_mug"] and "coffee_mug" not in apply_update(OFFICE, missing).nodes


def test_an_object_the_robot_does_not_see_now_is_not_forgotten() -> None:
    """not_found without a grasp that found nothing where the object should be (a bound world object out of view
    and no position to grasp at): not in view is not "looked and it is not there"."""
    unseen = skill_update(
        OFFICE, step("pickup", "coffee_mug"), SPOT, SpotBelief("kitchen_cupboard"), SkillCode.NOT_FOUND, None
    )
    assert unseen.remove == [] and "coffee_mug" in apply_update(OFFICE, unseen).nodes


def test_the_gripper_state_at_the_end_overrides_the_plan_model() -> None:
    """A pickup canceled after the grasp held: the object is in the hand. A release whose gripper opened but whose
    stow failed: the object is at the place, not in the hand. A release that failed before opening: still held."""
    canceled = skill_update(
        OFFICE, step("pickup", "coffee_mug"), SPOT, SpotBelief("kitchen_cupboard"), SkillCode.CANCELED, None,
        held=True,
    )  # fmt: skip
    graph = apply_update(OFFICE, canceled)
    assert held_by_agent(graph, "coffee_mug")
    not_held = skill_update(
        OFFICE, step("pickup", "coffee_mug"), SPOT, SpotBelief("kitchen_cupboard"), SkillCode.CANCELED, None,
        held=False,
    )  # fmt: skip
    assert OFFICE.parent("coffee_mug") == apply_update(OFFICE, not_held).parent("coffee_mug") == "kitchen_cupboard"
    belief = SpotBelief("nikos_desk")
    desk = (41.2, 4.7, 0.85)
    opened = skill_update(
        graph, step("release", "coffee_mug"), SPOT, belief, SkillCode.SKILL_FAILED, None, placed_at=desk, held=False
    )
    after = apply_update(graph, opened)
    assert not held_by_agent(after, "coffee_mug") and after.parent("coffee_mug") == "nikos_desk"
    assert after.nodes["coffee_mug"].position == desk
    stalled = skill_update(
        graph, step("release", "coffee_mug"), SPOT, SpotBelief("nikos_desk"), SkillCode.UNREACHABLE, None,
        placed_at=desk, held=True,
    )  # fmt: skip
    assert held_by_agent(apply_update(graph, stalled), "coffee_mug")


def test_a_pick_walks_up_unless_the_robot_stands_at_the_objects_support() -> None:
    """Found by a hostile review: whether Spot walked up before a grasp followed from the set having an access
    verb, so adding one to spot_lookplangraph made every pick_up grasp from wherever the robot stood."""
    support = OFFICE.parent("orange")
    assert support is not None
    for actions, verb in ((SPOT, "pickup"), (SPOT_LPG, "pick_up")):
        walk_first = compile_skill(step(verb, "orange"), OFFICE, SITE, None, OPTIONS, actions).primitives
        elsewhere = compile_skill(step(verb, "orange"), OFFICE, SITE, "nikos_desk", OPTIONS, actions).primitives
        at_support = compile_skill(step(verb, "orange"), OFFICE, SITE, support, OPTIONS, actions).primitives
        assert [type(p).__name__ for p in walk_first] == [type(p).__name__ for p in elsewhere] == ["Approach", "Grasp"]
        assert [type(p).__name__ for p in at_support] == ["Grasp"], verb


def test_a_pick_that_walked_leaves_what_was_accessed_and_the_support_is_the_nearest_asset() -> None:
    """Found by a second review: after a pick that walked up to its object, the belief still said the robot stood
    at the accessed asset, so a release put the object down there from metres away; and an object inside a fridge
    on a bench was grasped from the bench's standoff (any ancestor counted, not the support under_accessed means)."""
    graph = OFFICE.copy()
    graph.add_node(Node("sock", "object", position=(50.0, -1.0, 0.1), affordances=("pickup",)), "kitchen")
    belief = SpotBelief("kitchen_bench")
    walk = compile_skill(step("pickup", "sock"), graph, SITE, belief.accessed, OPTIONS, SPOT)
    assert [type(p).__name__ for p in walk.primitives] == ["Approach", "Grasp"]
    skill_update(graph, step("pickup", "sock"), SPOT, belief, SkillCode.NONE, None)
    assert belief.accessed is None  # it walked: the bench is no longer where it stands
    with pytest.raises(TargetError, match="needs an accessed asset"):
        compile_skill(step("release", "sock"), graph, SITE, belief.accessed, OPTIONS, SPOT)
    # grasping where it stands keeps the accessed asset (SayPlan's access then pickup)
    support = OFFICE.parent("orange")
    belief = SpotBelief(support)
    skill_update(OFFICE, step("pickup", "orange"), SPOT, belief, SkillCode.NONE, None)
    assert belief.accessed == support
    # the support is the nearest asset or workspace, not any ancestor: "accessed" the orange's room or floor, the
    # robot still walks up
    for above in OFFICE.ancestors(support or "")[:2]:
        from_above = compile_skill(step("pickup", "orange"), OFFICE, SITE, above, OPTIONS, SPOT).primitives
        assert [type(p).__name__ for p in from_above] == ["Approach", "Grasp"], above


def test_a_stand_pose_entry_is_where_to_stand_not_where_to_grasp() -> None:
    """An object's site-file pose is where the robot stands to reach it: pick_up walks there, then grasps at the
    object's scene-graph position."""
    mug = OFFICE.nodes["coffee_mug"].position
    assert mug is not None
    site = SpotSite.from_dict({"frame": "map", "nodes": {"coffee_mug": {"pose": [54.47, -2.8, -90]}}})
    walk, grasp = compile_skill(step("pick_up", "coffee_mug"), OFFICE, site, None, OPTIONS, SPOT_LPG).primitives
    assert isinstance(walk, Walk) and walk.pose[:2] == (54.47, -2.8)
    assert isinstance(grasp, Grasp) and grasp.point == pytest.approx(mug)


def test_a_robot_fault_only_reports_the_robot() -> None:
    belief = SpotBelief("kitchen_bench")
    update = skill_update(
        OFFICE, step("pickup", "orange"), SPOT, belief, SkillCode.LEASE_LOST, RobotPose(55.0, -5.0, 0.0)
    )
    assert [u.node.id for u in update.upsert] == ["agent"] and not update.remove
    assert belief.accessed == "kitchen_bench"  # a pickup that never started leaves the robot where it was


def test_the_readme_spot_parameter_table_states_the_declared_defaults() -> None:
    """Rows of the Spot manual's parameter table (docs/howto/spot.md) whose default is "empty" or one `value` hold for
    every parameter the row names (the full table is generated; this one is written by hand)."""
    text = (ROOT / "docs" / "howto" / "spot.md").read_text()
    section = text[text.index("Parameters (`config/robots/spot.yaml`") :]
    rows = [line for line in section[: section.index("\n\n", section.index("| parameter"))].splitlines()[3:]]
    checked = 0
    for row in rows:
        names_cell, default_cell = (cell.strip() for cell in row.strip("|").split("|")[:2])
        names = [n.strip().strip("`") for n in names_cell.split(",")]
        if default_cell == "empty":
            expected = ""
        elif default_cell.count("`") == 2 and default_cell.startswith("`") and default_cell.endswith("`"):
            expected = default_cell.strip("`")
        else:
            continue
        for name in names:
            assert str(SPOT_SETTINGS[name].default) == expected, f"README: {name} defaults to {expected!r}"
            checked += 1
    assert checked >= 8


def gripper_of(update: object) -> str | None:
    agent = next(u.node for u in update.upsert if u.node.type == "agent")  # type: ignore[attr-defined]
    value = agent.attributes.get(GRIPPER_ATTRIBUTE)
    return None if value is None else str(value)


def test_every_update_that_read_the_gripper_says_what_it_holds_and_a_slipped_object_leaves_the_hand() -> None:
    """Issue 23: the graph never disagrees with the gripper. A mug the graph has in the hand but the gripper does
    not (it slipped out on a walk) is put in the robot's room near the robot; a claw stuck on a handle is named;
    an update whose gripper was not read says nothing about it."""
    picked = skill_update(
        OFFICE, step("pickup", "coffee_mug"), SPOT, SpotBelief("kitchen_cupboard"), SkillCode.NONE, None, held=True
    )
    graph = apply_update(OFFICE, picked)
    assert held_by_agent(graph, "coffee_mug") and gripper_of(picked) == "coffee_mug"
    pose = RobotPose(30.0, -2.0, 0.0)
    walked = skill_update(graph, step("goto", "kitchen"), SPOT, SpotBelief(), SkillCode.NONE, pose, held=False)
    after = apply_update(graph, walked)
    assert after.held_object() is None and gripper_of(walked) == "empty"
    assert after.parent("coffee_mug") == after.room_of("kitchen") == "kitchen"
    assert after.nodes["coffee_mug"].position == (30.0, -2.0, 0.0)
    stuck = skill_update(
        OFFICE, step("open", "kitchen_cupboard"), SPOT, SpotBelief(), SkillCode.ROBOT_FAULT, None, held=True
    )
    assert gripper_of(stuck) == "the handle of kitchen_cupboard" and apply_update(OFFICE, stuck).held_object() is None
    unread = skill_update(OFFICE, step("goto", "kitchen"), SPOT, SpotBelief(), SkillCode.NONE, None)
    assert gripper_of(unread) is None


@pytest.mark.parametrize("action", ["pickup", "pick_up", "open", "close"])
def test_a_skill_that_grasps_is_refused_while_the_graph_has_something_in_the_hand(action: str) -> None:
    graph = apply_update(
        OFFICE,
        skill_update(OFFICE, step("pickup", "coffee_mug"), SPOT, SpotBelief("kitchen_cupboard"), SkillCode.NONE, None),
    )
    target = "kitchen_cupboard" if action in ("open", "close") else "clean_glass"
    actions = SPOT_LPG if action == "pick_up" else SPOT
    assert hand_refusal(step(action, target), OFFICE, actions) == ""
    refusal = hand_refusal(step(action, target), graph, actions)
    assert "refused before the robot moved" in refusal and "already holds coffee_mug" in refusal
    assert hand_refusal(step("goto", "kitchen"), graph, SPOT) == ""
    assert hand_refusal(step("release", "coffee_mug"), graph, SPOT) == ""
