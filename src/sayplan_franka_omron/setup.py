"""sayplan_franka_omron: the skill server of SayPlan's own robot, a Franka arm on an Omron LD mobile base."""

from glob import glob

from setuptools import find_packages, setup

package_name = "sayplan_franka_omron"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
        ("share/" + package_name + "/examples", glob("examples/*.yaml")),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="SayPlan ROS maintainers",
    maintainer_email="maintainers@sayplan-ros.dev",
    description="SayPlan skills on a Franka arm (franka_ros2) and an Omron LD base (ARCL) or any Nav2 base.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "franka_omron_skill_server = sayplan_franka_omron.skill_server:main",
        ],
        "sayplan.robots": ["franka_omron = sayplan_franka_omron.plugin:FRANKA_OMRON"],
    },
)
