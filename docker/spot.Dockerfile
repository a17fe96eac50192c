# Robot `spot` on a real ROS 2 install: the stack image (docker/Dockerfile) plus the Spot SDK.
#
# Workstation (Jazzy, x86_64):
#   docker build -f docker/Dockerfile -t sayplan:jazzy .
#   docker build -f docker/spot.Dockerfile -t sayplan-spot:jazzy .
# Jetson AGX Orin on Spot (JetPack 6 = Ubuntu 22.04, so Humble; arm64 images build natively on the Jetson):
#   docker build -f docker/Dockerfile --build-arg ROS_DISTRO=humble -t sayplan:humble .
#   docker build -f docker/spot.Dockerfile --build-arg BASE_IMAGE=sayplan:humble -t sayplan-spot:humble .
#   docker compose -f docker/compose.spot-jetson.yaml up      # with Ollama on the Jetson's GPU
# The robot login is passed at run time (-e BOSDYN_CLIENT_USERNAME -e BOSDYN_CLIENT_PASSWORD), never baked in.
# Not built or run on the development machine (it has no Docker engine): see README "Spot".
ARG BASE_IMAGE=sayplan:jazzy
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-c"]
WORKDIR /ws
COPY requirements/spot.txt requirements/spot.txt
# bosdyn-client/-api/-core (pinned) are pure Python; pip resolves grpcio, protobuf and the rest against what the
# image already has (the venv path pins them all; here the system's python3-* packages must not be replaced).
RUN pip=(pip3 install); pip3 install --help | grep -q break-system-packages && pip+=(--break-system-packages); \
    "${pip[@]}" $(grep -E '^bosdyn-' requirements/spot.txt) \
 && source /ws/install/setup.bash && python3 -c "import bosdyn.client, sayplan_spot.robot"

# The site folder (scene graph, site file, a spot.yaml with the robot's address) is mounted at /site; see the
# compose file for how it replaces config/robots/spot.yaml.
CMD ["bash", "-lc", "source /ws/install/setup.bash && ros2 launch sayplan_ros sayplan.launch.py robot:=spot planner:=embodiedrag llm:=ollama"]
