# sayplan_core environment hook (named in colcon.pkg), sourced by colcon's package.sh
# `sayplan` on PATH after `source install/setup.bash`: ament_python installs console scripts in lib/sayplan_core
# (where `ros2 run sayplan_core sayplan` finds them), which colcon does not put on PATH by itself.
# COLCON_CURRENT_PREFIX is this package's install prefix while colcon's setup scripts source this hook.
_colcon_prepend_unique_value PATH "$COLCON_CURRENT_PREFIX/lib/sayplan_core"
