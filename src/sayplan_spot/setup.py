"""sayplan_spot: the Spot skill server. The SDK is its own extra, so the base install never needs it."""

from setuptools import find_packages, setup

package_name = "sayplan_spot"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    install_requires=["setuptools"],
    extras_require={"spot": ["bosdyn-client==5.2.0", "bosdyn-api==5.2.0", "bosdyn-core==5.2.0"]},
    zip_safe=False,
    maintainer="SayPlan ROS maintainers",
    maintainer_email="maintainers@sayplan-ros.dev",
    description="Skill server of robot spot: Boston Dynamics Spot through bosdyn-client.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": ["spot_skill_server = sayplan_spot.skill_server:main"],
        "sayplan.robots": ["spot = sayplan_spot.plugin:SPOT"],
    },
)
