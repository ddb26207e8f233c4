"""JupyterHub for a workshop on one GPU host: each learner logs in with the room's shared
password and gets a container of the workshop image (docker/Dockerfile) of their own,
started by DockerSpawner; a seat left idle is stopped by jupyterhub-idle-culler (its work
stays in its volume). The teachers (the hub's admins) grade the lessons' exercises with
nbgrader: every seat mounts one exchange volume, where a teacher releases and collects.
docker/jupyterhub/README.md says how to run it:

    WD_TEACH_HUB_PASSWORD=... jupyterhub -f docker/jupyterhub/jupyterhub_config.py

Settings come from the environment, so that this file stays as it is:

  WD_TEACH_HUB_PASSWORD        the learners' shared password, 8 characters or more (required)
  WD_TEACH_HUB_ADMINS          the teachers' user names, comma separated (default: none)
  WD_TEACH_HUB_ADMIN_PASSWORD  the teachers' password, 32 characters or more
  WD_TEACH_HUB_IMAGE           the workshop image (default wd-teach:latest)
  WD_TEACH_HUB_GPUS            shared: every seat sees every GPU (default); per-seat: each seat
                               gets a GPU of its own; none: no GPU (a CPU host, CI)
  WD_TEACH_HUB_GPU_IDS         per-seat: the GPUs to hand out, e.g. 0,1,2,3 (default: every GPU
                               that nvidia-smi lists)
  WD_TEACH_HUB_SEAT_GPU_MEMORY_GB
                               GiB of GPU memory each seat may use (default: no limit); a
                               seat's wd-teach honours it (WD_TEACH_GPU_MEMORY_GB)
  WD_TEACH_HUB_IDLE_TIMEOUT    seconds without activity before a seat is stopped (default 3600)
  WD_TEACH_HUB_PORT            the port learners open (default 8000)
  WD_TEACH_HUB_API_PORT        the hub's own port, which the seats call (default 8081)
  WD_TEACH_HUB_STATE           folder for the hub's database and cookie secret (default: the
                               folder the hub is started in)
  WD_TEACH_HUB_NETWORK         the engine's network for the seats (default bridge)
  WD_TEACH_HUB_CONNECT_IP      where the seats reach the hub (default: the network's gateway)
  DOCKER_HOST                  the engine's API (default Docker's socket; Podman's works too)
"""

import asyncio
import os
import subprocess
import sys

c = get_config()  # noqa: F821  (JupyterHub's config loader provides get_config)

GPU_MODES = ("shared", "per-seat", "none")
EXCHANGE_VOLUME = "wd-teach-hub-exchange"


def setting(name: str, default: str | None = None) -> str:
    value = os.environ.get(f"WD_TEACH_HUB_{name}", "").strip()
    if value:
        return value
    if default is None:
        sys.exit(f"jupyterhub_config.py: set WD_TEACH_HUB_{name} (docker/jupyterhub/README.md)")
    return default


def whole_number(name: str, default: str) -> int:
    value = setting(name, default)
    if not value.isdigit() or int(value) == 0:
        sys.exit(f"jupyterhub_config.py: WD_TEACH_HUB_{name} must be a whole number above 0, "
                 f"not {value!r}")
    return int(value)


def seat_gpu_memory() -> str | None:
    """WD_TEACH_HUB_SEAT_GPU_MEMORY_GB, checked here: a typo must stop the hub, not every seat."""
    value = os.environ.get("WD_TEACH_HUB_SEAT_GPU_MEMORY_GB", "").strip()
    if not value:
        return None
    try:
        gib = float(value)
    except ValueError:
        gib = 0.0
    if not (0 < gib < float("inf")):
        sys.exit("jupyterhub_config.py: WD_TEACH_HUB_SEAT_GPU_MEMORY_GB is each seat's GPU "
                 f"memory in GiB, a number above 0 (e.g. 4), not {value!r}")
    return value


def room_role(spawner) -> str:
    """nbgrader's role of a seat (docker/nbgrader_config.py): the hub's admins teach."""
    return "teacher" if spawner.user.admin else "learner"


def network_gateway(network: str) -> str:
    """The gateway of the seats' network: the host's address as the seats see it."""
    import docker

    try:
        found = docker.from_env().networks.get(network).attrs
    except Exception as error:  # the engine is down, or no such network
        sys.exit(f"jupyterhub_config.py: cannot read network {network!r} from the engine at "
                 f"{os.environ.get('DOCKER_HOST', 'the default socket')}: {error}. Is the "
                 "engine running? Or set WD_TEACH_HUB_CONNECT_IP.")
    return found["IPAM"]["Config"][0]["Gateway"]


def host_gpu_ids() -> list[str]:
    """The GPUs to hand out, one to a seat: WD_TEACH_HUB_GPU_IDS, else those nvidia-smi lists."""
    listed = os.environ.get("WD_TEACH_HUB_GPU_IDS", "").strip()
    if listed:
        return [gpu.strip() for gpu in listed.split(",") if gpu.strip()]
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        sys.exit("jupyterhub_config.py: WD_TEACH_HUB_GPUS=per-seat needs the host's GPUs: "
                 "nvidia-smi did not list them; set WD_TEACH_HUB_GPU_IDS (e.g. 0,1,2,3)")
    return out.split()


def free_gpu(gpu_ids: list[str], held: set[str]) -> str:
    """The first GPU no running seat holds; an error a learner can act on when all are held."""
    for gpu in gpu_ids:
        if gpu not in held:
            return gpu
    raise RuntimeError(f"Every GPU of this host ({len(gpu_ids)}) has a seat now. Try again when a "
                       "seat is stopped, or ask the teacher (WD_TEACH_HUB_GPUS=shared lets seats "
                       "share GPUs).")


class SeatGpus:
    """Per-seat GPUs: a pre-spawn hook gives a seat the first GPU no other seat holds, a
    post-stop hook takes it back. Seats that run are read from the engine's labels, so that
    a restarted hub sees them; seats starting are remembered here until they stop."""

    LABEL = "wd-teach.gpu"

    def __init__(self, gpu_ids: list[str]):
        self.gpu_ids = gpu_ids
        self.given: dict[str, str] = {}  # user name -> GPU, from start to stop
        self.lock = asyncio.Lock()

    async def give(self, spawner) -> None:
        async with self.lock:
            running = await spawner.docker("containers", filters={"label": self.LABEL})
            name = spawner.user.name
            held = {box["Labels"][self.LABEL] for box in running
                    if f"/{spawner.container_name}" not in box.get("Names", [])}
            held |= {gpu for user, gpu in self.given.items() if user != name}
            gpu = self.given[name] = free_gpu(self.gpu_ids, held)
        spawner.extra_create_kwargs = {**spawner.extra_create_kwargs,
                                       "labels": {self.LABEL: gpu}}
        spawner.extra_host_config = {**spawner.extra_host_config, "device_requests": [
            {"driver": "nvidia", "device_ids": [gpu], "capabilities": [["gpu"]]}]}
        spawner.log.info("seat of %s gets GPU %s", name, gpu)

    def take_back(self, spawner) -> None:
        self.given.pop(spawner.user.name, None)


# --- who may log in: one shared password for the room, another for the teachers ---
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = setting("PASSWORD")
c.Authenticator.allow_all = True  # any name with the room's password: a seat of its own
admins = [name.strip() for name in setting("ADMINS", "").split(",") if name.strip()]
if admins:
    c.Authenticator.admin_users = set(admins)
    c.SharedPasswordAuthenticator.admin_password = setting("ADMIN_PASSWORD")

# --- the hub and its proxy ---
state = setting("STATE", os.getcwd())
c.JupyterHub.bind_url = f"http://:{whole_number('PORT', '8000')}"
c.JupyterHub.db_url = f"sqlite:///{os.path.join(state, 'jupyterhub.sqlite')}"
c.JupyterHub.cookie_secret_file = os.path.join(state, "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = os.path.join(state, "jupyterhub-proxy.pid")
network = setting("NETWORK", "bridge")
# The proxy and the culler reach the hub here; the seats from their network, through its
# gateway (Podman makes that address only when its first container starts).
c.JupyterHub.hub_ip = "0.0.0.0"
c.JupyterHub.hub_port = hub_port = whole_number("API_PORT", "8081")
c.JupyterHub.hub_connect_ip = "127.0.0.1"
seats_reach_hub = os.environ.get("WD_TEACH_HUB_CONNECT_IP") or network_gateway(network)
c.DockerSpawner.hub_connect_url = f"http://{seats_reach_hub}:{hub_port}"

# --- a seat: a container of the workshop image, its work in a volume of its own ---
c.JupyterHub.spawner_class = "dockerspawner.DockerSpawner"
c.DockerSpawner.image = setting("IMAGE", "wd-teach:latest")
c.DockerSpawner.pull_policy = "ifnotpresent"
c.DockerSpawner.network_name = network
# The image's entrypoint copies the lessons into the work folder, then starts the hub's server.
c.DockerSpawner.cmd = ["jupyterhub-singleuser"]
c.DockerSpawner.volumes = {"wd-teach-hub-{username}": "/home/learner/work",
                           # nbgrader's exchange: one for the room, every seat mounts it
                           EXCHANGE_VOLUME: "/srv/nbgrader/exchange"}
# Each seat's role for nbgrader (a teacher's seat gets the course, a learner's the
# Assignments page), and its share of the GPU, which wd-teach in the seat honours.
c.Spawner.environment = {"WD_TEACH_ROOM_ROLE": room_role}
if seat_gpu_memory():
    c.Spawner.environment["WD_TEACH_GPU_MEMORY_GB"] = seat_gpu_memory()
c.DockerSpawner.remove = True  # a stopped seat's container goes; its volume stays
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 300  # the first start of a seat on a host copies a large image
c.Spawner.http_timeout = 120

gpus = setting("GPUS", "shared")
if gpus not in GPU_MODES:
    sys.exit(f"jupyterhub_config.py: WD_TEACH_HUB_GPUS is one of {', '.join(GPU_MODES)}, "
             f"not {gpus!r}")
if gpus == "shared":
    c.DockerSpawner.extra_host_config = {"device_requests": [
        {"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]}
elif gpus == "per-seat":
    seat_gpus = SeatGpus(host_gpu_ids())
    c.Spawner.pre_spawn_hook = seat_gpus.give
    c.Spawner.post_stop_hook = seat_gpus.take_back
    c.JupyterHub.active_server_limit = len(seat_gpus.gpu_ids)

# --- idle seats are stopped by jupyterhub-idle-culler, a service of the hub ---
idle_timeout = whole_number("IDLE_TIMEOUT", "3600")
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={idle_timeout}",
                f"--cull-every={max(10, min(300, idle_timeout // 4))}"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
