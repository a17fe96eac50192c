"""`ros2 launch <file> name:=value...` where ros2launch is not installed (the PyPI wheels here; the test overlay
brings `launch` and `launch_ros`): a real LaunchService including the launch file with those arguments, as
`ros2 launch` does. Used by the shutdown tests and scripts/bench_stop_time.py.

    SAYPLAN_TEST_OVERLAY=1 scripts/ws_env.sh python scripts/ros2_launch.py launch/sayplan.launch.py robot:=sim
"""

import sys

from launch import LaunchDescription, LaunchService
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource


def main() -> int:
    if len(sys.argv) < 2 or any(":=" not in a for a in sys.argv[2:]):
        print("usage: ros2_launch.py <launch file> [name:=value ...]", file=sys.stderr)
        return 2
    arguments = dict(a.split(":=", 1) for a in sys.argv[2:])
    service = LaunchService(argv=sys.argv[2:])
    source = PythonLaunchDescriptionSource(sys.argv[1])
    service.include_launch_description(
        LaunchDescription([IncludeLaunchDescription(source, launch_arguments=arguments.items())])
    )
    return int(service.run())


if __name__ == "__main__":
    sys.exit(main())
