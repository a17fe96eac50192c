# Robot `spot` on a real ROS 2 install: the stack image (docker/Dockerfile) plus the Spot SDK, installed by the same
# script (scripts/install_deps.sh pip spot; pins in requirements/spot.txt).
#
# Workstation (x86_64):
#   docker build -f docker/Dockerfile -t sayplan:jazzy .
#   docker build -f docker/spot.Dockerfile -t sayplan-spot:jazzy .
# Jetson AGX Orin on Spot (JetPack 6; arm64 images build natively on the Jetson). The stack needs no GPU (Ollama
# has it, in its own container), so the image is Jazzy (Ubuntu 24.04) like the workstation's, whatever the host's
# Ubuntu; a Humble base (ROS_DISTRO=humble, EXTRAS=) works without the embodiedrag planner (docs/howto/install.md):
#   docker build -f docker/Dockerfile -t sayplan:jazzy .
#   docker build -f docker/spot.Dockerfile -t sayplan-spot:jazzy .
#   docker compose -f docker/compose.spot-jetson.yaml up      # with Ollama on the Jetson's GPU
# The robot login is passed at run time (-e BOSDYN_CLIENT_USERNAME -e BOSDYN_CLIENT_PASSWORD), never baked in.
# Not built in CI (no Docker engine there); CI checks its pins and runs hadolint on it.
ARG BASE_IMAGE=sayplan:jazzy
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /ws
COPY requirements/spot.txt requirements/spot.txt
RUN scripts/install_deps.sh pip spot \
 && source /ws/install/setup.bash && python3 -c "import bosdyn.client, sayplan_spot.robot"

# The site folder (scene graph, site file, a spot.yaml with the robot's address) is mounted at /site; see the
# compose file for how it replaces config/robots/spot.yaml.
CMD ["bash", "-lc", "source /ws/install/setup.bash && ros2 launch sayplan_ros sayplan.launch.py robot:=spot planner:=embodiedrag llm:=ollama"]
