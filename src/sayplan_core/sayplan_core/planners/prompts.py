"""Prompt text for the SayPlan family (structure after SayPlan appendix J and LookPlanGraph A.2).

The static part comes first and never changes within a task, so servers and the
embedded model can reuse its cached prefix; only the dynamic part at the end changes.
"""

from __future__ import annotations

from sayplan_core.sim.action_set import ActionSet

STATES = """Scene graph states:
- an object's "state" is ontop_of(<asset>), inside_of(<asset>) or inside_hand (the agent holds it).
- "closed" assets can be opened; what is inside a closed asset cannot be taken until it is opened.
- "open" assets can be closed; "on"/"off" assets can be switched.
- "affordances" list what can be done to a node (open, close, turn_on, turn_off, pickup, release)."""

SEARCH_API = """Graph API (search):
- expand(<node>): reveal the assets and objects in a room (or the rooms of a floor).
- contract(<node>): hide them again to keep the graph small; the node stays in memory.
Rooms are always visible (a path planner handles the pose nodes between them).
Expand only rooms or floors that may hold what the task needs."""

FLOOR_SEARCH_API = """Graph API (search):
- expand(<floor>): list the rooms of a floor.
- expand(<room>): reveal the assets and objects in a room of an expanded floor.
- contract(<node>): hide them again to keep the graph small; contracting a floor hides its rooms and what you
  expanded in them. The node stays in memory.
The building is large, so at first only its floors are visible. Expand the floor that may hold what the task needs,
then the rooms on it; contract floors and rooms you no longer need. A plan can only name visible nodes: keep the
floors of the rooms it visits expanded (a path planner handles the stairs and corridors between them)."""

ROOM_EXAMPLE = """Example. Instruction: put the milk from the fridge on the bench.
Memory: [] -> {"chain_of_thought": "milk is likely in the kitchen", "reasoning": "expand the kitchen",
"mode": "exploring", "command": {"command_name": "expand", "node_name": "kitchen", "plan": [], "answer": []}}"""

FLOOR_EXAMPLE = """Example. Instruction: put the milk from the fridge on the bench.
Memory: [] -> {"chain_of_thought": "the kitchen is on the ground floor", "reasoning": "list the rooms of floor0",
"mode": "exploring", "command": {"command_name": "expand", "node_name": "floor0", "plan": [], "answer": []}}
Memory: [floor0] -> {"chain_of_thought": "milk is likely in the kitchen", "reasoning": "expand the kitchen",
"mode": "exploring", "command": {"command_name": "expand", "node_name": "kitchen", "plan": [], "answer": []}}"""


#: A second worked example (the `search_example` aid): a search task ends with a plan as soon as the item is visible.
SEARCH_EXAMPLE = """Example. Instruction: find me an umbrella.
Memory: [] -> {"chain_of_thought": "umbrellas are left near the entrance", "reasoning": "expand the entrance hall",
"mode": "exploring", "command": {"command_name": "expand", "node_name": "entrance_hall", "plan": [], "answer": []}}
Memory: [entrance_hall] -> {"chain_of_thought": "umbrella is now in the graph, on coat_rack: found", "reasoning":
"the instruction only asks to find it", "mode": "planning", "command": {"command_name": "plan", "node_name": "",
"plan": [{"action": "done", "target": ""}], "answer": ["umbrella"]}}"""
LITE_SEARCH_EXAMPLE = """Example. Instruction: find me an umbrella.
Memory: [] -> {"chain_of_thought": "umbrellas are left near the entrance", "reasoning": "expand the entrance hall",
"command": {"command_name": "expand", "node_name": "entrance_hall"}}
Memory: [entrance_hall] -> {"chain_of_thought": "umbrella is now in the graph, on coat_rack", "reasoning": "found",
"command": {"command_name": "done", "node_name": ""}}"""


def functions_block(actions: ActionSet) -> str:
    lines = "\n".join(f"- {line}" for line in actions.prompt_lines())
    return f"Robot functions (for plans):\n{lines}"


def sayplan_system(actions: ActionSet, floors_first: bool = False, search_example: bool = False) -> str:
    """floors_first: the graph starts collapsed to its floors (a large building), and the prompt says how to
    open them; else rooms are always visible. search_example: a second example, a search task (the aid)."""
    search_api, example = (FLOOR_SEARCH_API, FLOOR_EXAMPLE) if floors_first else (SEARCH_API, ROOM_EXAMPLE)
    seen = "floor0, kitchen" if floors_first else "kitchen"
    return f"""You are a graph planning agent for a mobile manipulator robot in a large building.
You see a 3D scene graph of the building. Explore it by expanding nodes to find the items the instruction needs,
then write a step-by-step plan the robot can follow. A path planner adds the moves between rooms, so plans only
need goto(<room>) for each room the robot must visit.

{functions_block(actions)}

{STATES}

{search_api}

Answer with one JSON object:
{{"chain_of_thought": "short reasoning steps", "reasoning": "why the next command",
  "mode": "exploring" or "planning",
  "command": {{"command_name": "expand" | "contract" | "plan", "node_name": "<node or empty>",
              "plan": [{{"action": "<function>", "target": "<node>"}}, ...], "answer": ["<node>", ...]}}}}
While exploring, give command_name expand or contract with a node_name and an empty plan.
When everything needed is visible, give command_name "plan" with the full plan ending in done; put the nodes the
instruction asks you to find in "answer" (empty if it asks for none). If the graph holds no answer, plan [done] with
an empty answer. If Feedback reports a problem with your last plan, fix the plan.

{example}
Memory: [{seen}] -> {{"chain_of_thought": "milk is inside the closed fridge; open it first", "reasoning": "all found",
"mode": "planning", "command": {{"command_name": "plan", "node_name": "", "plan": [{{"action": "goto", "target":
"kitchen"}}, {{"action": "access", "target": "fridge"}}, {{"action": "open", "target": "fridge"}}, {{"action":
"pickup", "target": "milk"}}, {{"action": "access", "target": "bench"}}, {{"action": "release", "target": "milk"}},
{{"action": "done", "target": ""}}], "answer": ["milk"]}}}}""" + (f"\n\n{SEARCH_EXAMPLE}" if search_example else "")


def dynamic(instruction: str, graph_text: str, memory: list[str], feedback: str) -> str:
    return (
        f"Instruction: {instruction}\n"
        f"3D scene graph: {graph_text}\n"
        f"Memory (expanded so far): [{', '.join(memory)}]\n"
        f"Feedback: {feedback or 'none'}"
    )


def lite_search_system(floors_first: bool = False, search_example: bool = False) -> str:
    """floors_first: as in `sayplan_system`, the graph starts at the floors and the search opens them first.
    search_example: a worked example of a search (the aid)."""
    nodes, search_api = ("floor and room nodes", FLOOR_SEARCH_API) if floors_first else ("room nodes", SEARCH_API)
    return f"""You are a graph search agent. Find the parts of a building's scene graph that an instruction needs,
by expanding and contracting {nodes}. You do not plan; another agent plans once you finish.

{search_api}
- done: call when everything the instruction needs is visible.

Answer with one JSON object:
{{"chain_of_thought": "short reasoning steps", "reasoning": "why the next command",
  "command": {{"command_name": "expand" | "contract" | "done", "node_name": "<node or empty>"}}}}""" + (
        f"\n\n{LITE_SEARCH_EXAMPLE}" if search_example else ""
    )


def lite_plan_system(actions: ActionSet) -> str:
    return f"""You are a task planner for a mobile manipulator robot. Given a scene graph with the relevant rooms
expanded, write the plan that carries out the instruction. A path planner adds the moves between rooms.

{functions_block(actions)}

{STATES}

Answer with one JSON object:
{{"chain_of_thought": "short reasoning steps",
  "plan": [{{"action": "<function>", "target": "<node>"}}, ...], "answer": ["<node>", ...]}}
End the plan with done. Put the nodes the instruction asks you to find in "answer". If Feedback reports a problem
with your last plan, fix it."""


def full_plan_system(actions: ActionSet) -> str:
    return f"""You are a task planner for a mobile manipulator robot. You see the whole scene graph of a building,
including the pose nodes and links between rooms. Write the complete plan in one go: the robot can only goto a room
or pose node linked to where it is, so include every goto along the way.

{functions_block(actions)}

{STATES}

Answer with one JSON object:
{{"chain_of_thought": "short reasoning steps",
  "plan": [{{"action": "<function>", "target": "<node>"}}, ...], "answer": ["<node>", ...]}}
End the plan with done."""
