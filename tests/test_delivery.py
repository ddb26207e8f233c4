"""The ways in stay true to pyproject.toml: the workshop image's Dockerfile, its compose file
and room script, and the notebooks' imports (which environment.yml, kept in step with
pyproject.toml by test_packaging.py, must be able to run)."""

import ast
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
DOCKERFILE = (DOCKER / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
HADOLINT = (shutil.which("hadolint")
            or shutil.which("hadolint", path=str(Path(sys.executable).parent)))


def instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    lines = [line for line in dockerfile.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(m.group(1).upper(), m.group(2)) for m in
            re.finditer(r"^\s*([A-Za-z]+)\s+(.*)$", joined, re.MULTILINE)]


@pytest.mark.skipif(HADOLINT is None, reason='hadolint is not installed: pip install -e ".[dev]"')
def test_dockerfile_lints_clean():
    done = subprocess.run([HADOLINT, str(DOCKER / "Dockerfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_dockerfile_base_is_a_cuda_devel_image_and_an_argument():
    steps = instructions(DOCKERFILE)
    assert steps[0][0] == "ARG" and re.fullmatch(
        r"BASE=nvidia/cuda:1[23]\.\d+\.\d+-devel-ubuntu\d\d\.\d\d", steps[0][1])
    assert steps[1] == ("FROM", "${BASE}")
    assert [s for s in steps if s[0] == "FROM"] == [steps[1]]


def test_dockerfile_proxy_arguments_do_nothing_when_unset():
    args = dict(a.split("=", 1) for kind, a in instructions(DOCKERFILE) if kind == "ARG")
    assert args["PIP_CERT"] == '""' and args["PIP_FIND_LINKS"] == '""'
    install = next(a for kind, a in instructions(DOCKERFILE)
                   if kind == "RUN" and "scripts/venv.sh" in a)
    assert '[ -n "${PIP_CERT}" ] || unset PIP_CERT' in install
    assert '[ -n "${PIP_FIND_LINKS}" ] || unset PIP_FIND_LINKS' in install


def test_dockerfile_installs_python_packages_only_as_pyproject_declares():
    """Python packages come from scripts/venv.sh (its torch pin, then `pip install -e .[extras]`),
    never from a list in the Dockerfile; the extras it names are pyproject's."""
    runs = [a for kind, a in instructions(DOCKERFILE) if kind == "RUN"]
    assert not [r for r in runs if re.search(r"\bpip3?\b|\bconda\b|\btorch\b", r)]
    install = next(r for r in runs if "scripts/venv.sh" in r)
    assert re.search(r'(^|; *)\. scripts/venv\.sh "\$\{extras\}"', install)
    named = set(re.findall(r"echo (\w+)", install))
    assert named == {"pycuda", "cu13"}
    assert named <= set(PYPROJECT["project"]["optional-dependencies"])
    venv_sh = (REPO / "scripts" / "venv.sh").read_text()
    assert 'extras="${1:-}"' in venv_sh and "TORCH_SPEC:-torch==" in venv_sh
    assert '-e ".${extras:+[$extras]}"' in venv_sh  # the extras asked for (+ cu13 if needed)
    assert set(re.findall(r'extras:\+\$extras,\}(\w+)', venv_sh)) <= set(
        PYPROJECT["project"]["optional-dependencies"])
    apt = next(r for r in runs if "apt-get install" in r)
    assert {"python3", "python3-venv", "python3-dev", "curl"} <= set(apt.split())


def test_dockerfile_runs_jupyterlab_as_a_user_with_a_health_check():
    steps = instructions(DOCKERFILE)
    user = [a for kind, a in steps if kind == "USER"]
    assert user and user[-1] not in ("root", "0", "0:0")
    assert ("EXPOSE", "8888") in steps
    health = next(a for kind, a in steps if kind == "HEALTHCHECK")
    assert "entrypoint.sh" in health and health.rstrip().endswith('"health"]')
    entrypoint = (DOCKER / "entrypoint.sh").read_text()
    assert "/api/status" in entrypoint and "JUPYTER_TOKEN" in entrypoint
    assert ("CMD", '["lab"]') in steps


def test_build_context_leaves_out_what_the_image_must_not_carry():
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "artifacts"} <= set(ignored)


@pytest.mark.parametrize("script", ["entrypoint.sh", "room.sh"])
def test_shell_scripts_parse(script):
    done = subprocess.run(["bash", "-n", str(DOCKER / script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_compose_reserves_the_gpu_and_keeps_the_work_in_a_volume():
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    lab = compose["services"]["lab"]
    assert lab["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    device = lab["deploy"]["resources"]["reservations"]["devices"][0]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
    assert "work:/home/learner/work" in lab["volumes"][0] and "work" in compose["volumes"]
    assert lab["ports"] == ["${WD_TEACH_PORT:-8888}:8888"]
    assert "JUPYTER_TOKEN" in lab["environment"]


def room(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(DOCKER / "room.sh"), *args], capture_output=True,
                          text=True, timeout=60)


def seat_commands(out: str) -> list[list[str]]:
    return [shlex.split(line) for line in out.splitlines()
            if re.match(r"(docker|podman) run", line)]


def flag_values(command: list[str], flag: str) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command) if word == flag]


def test_room_of_three_seats_has_distinct_ports_tokens_and_volumes():
    done = room("--dry-run", "--host", "lab.example", "3")
    assert done.returncode == 0, done.stderr
    commands = seat_commands(done.stdout)
    assert len(commands) == 3
    ports = [flag_values(c, "--publish")[0] for c in commands]
    tokens = [e for c in commands for e in flag_values(c, "--env")
              if e.startswith("JUPYTER_TOKEN=")]
    volumes = [flag_values(c, "--volume")[0].split(":")[0] for c in commands]
    names = [flag_values(c, "--name")[0] for c in commands]
    for values in (ports, tokens, volumes, names):
        assert len(set(values)) == 3, values
    assert ports == ["8801:8801", "8802:8802", "8803:8803"]
    assert all(len(t.split("=")[1]) >= 32 for t in tokens)
    assert all(flag_values(c, "--gpus") == ["all"] for c in commands)
    table = done.stdout.split("\n\n")[-1].splitlines()
    assert table[0].split() == ["seat", "port", "token", "url"]
    for row, token in zip(table[1:], tokens, strict=True):
        seat, port, shown, url = row.split()
        assert shown == token.split("=")[1]
        assert url == f"http://lab.example:{port}/lab?token={shown}"


def test_room_gives_one_gpu_per_seat_when_asked():
    docker = seat_commands(room("--dry-run", "--gpus", "per-seat", "3").stdout)
    assert [flag_values(c, "--gpus") for c in docker] == [["device=0"], ["device=1"], ["device=2"]]
    podman = seat_commands(
        room("--dry-run", "--engine", "podman", "--gpus", "per-seat", "2").stdout)
    assert [flag_values(c, "--device") for c in podman] == [["nvidia.com/gpu=0"],
                                                            ["nvidia.com/gpu=1"]]


@pytest.mark.parametrize("args, says", [
    (["0"], "SEATS must be a number"), (["--gpus", "some", "2"], "shared or per-seat"),
    (["--first-port", "65535", "2"], "past port 65535"),
    (["--engine", "lxc", "1"], "docker or podman"),
])
def test_room_refuses_bad_input(args, says):
    done = room("--dry-run", *args)
    assert done.returncode == 2 and says in done.stderr


def _imports(notebook: Path) -> set[str]:
    found = set()
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        # Magics and shell lines read as `pass`, at their indent (a `!` may be an if's body).
        source = "\n".join(line[:len(line) - len(line.lstrip())] + "pass"
                           if line.lstrip().startswith(("%", "!")) else line
                           for line in "".join(cell["source"]).splitlines())
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def _declared_closure() -> set[str]:
    """Distributions that pyproject's requirements (and the GPU extras) bring, transitively."""
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    todo = [Requirement(r) for r in [*project["dependencies"], *extras["pycuda"], *extras["cu13"]]]
    seen = set()
    while todo:
        name = canonicalize_name(todo.pop().name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [r for r in map(Requirement, requires) if r.marker is None or r.marker.evaluate()]
    return seen


@pytest.mark.parametrize("notebook", sorted((REPO / "notebooks").glob("*.ipynb")),
                         ids=lambda p: p.stem)
def test_notebook_imports_only_what_pyproject_and_environment_yml_bring(notebook):
    ours = set(_shipped_folders())
    distributions = importlib.metadata.packages_distributions()
    declared = _declared_closure()
    for module in sorted(_imports(notebook) - ours - set(sys.stdlib_module_names)):
        names = {canonicalize_name(d) for d in distributions.get(module, [module])}
        assert names & declared, (f"{notebook.name} imports {module}, which no requirement in "
                                  "pyproject.toml brings: add it there and to environment.yml")


def _shipped_folders() -> dict[str, Path]:
    """Every package a wheel must carry: each folder of wd_teach/ and envs/ with Python in it,
    by its import name."""
    folders = {}
    for package, folder in [("wd_teach", "wd_teach"), ("wd_teach_envs", "envs")]:
        for init in sorted((REPO / folder).rglob("*.py")):
            parts = init.parent.relative_to(REPO / folder).parts
            if "__pycache__" not in parts:
                folders[".".join((package, *parts))] = init.parent
    return folders


def test_every_folder_with_python_is_a_package_the_wheel_ships():
    """setup.py ships the folders that find_packages finds: those with an __init__.py."""
    missing = sorted(name for name, folder in _shipped_folders().items()
                     if not (folder / "__init__.py").is_file())
    assert missing == [], f"add an __init__.py to the folders of {missing}, or the wheel lacks them"


def test_every_data_file_is_package_data():
    """.cu, .cuh and .yaml files that the code reads must be in the wheel too."""
    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    roots = {"wd_teach": REPO / "wd_teach", "wd_teach_envs": REPO / "envs"}
    for package, root in roots.items():
        for path in root.rglob("*"):
            if path.suffix not in {".cu", ".cuh", ".yaml"} or "__pycache__" in path.parts:
                continue
            relative = path.relative_to(root)
            assert any(relative.match(pattern) or Path("x", relative).match(pattern)
                       for pattern in package_data.get(package, [])), (
                f"{path.relative_to(REPO)} is not in [tool.setuptools.package-data] {package}")


# --- docker/jupyterhub/: the one-host hub's config and the cluster's Helm values ---
HUB = DOCKER / "jupyterhub"


def load_hub_config(monkeypatch, **settings: str):
    """The hub's config as JupyterHub loads it, with WD_TEACH_HUB_* settings (the seats'
    address given, so that no engine is asked)."""
    from traitlets.config.loader import PyFileConfigLoader

    for name in [n for n in os.environ if n.startswith("WD_TEACH_HUB_")]:
        monkeypatch.delenv(name)
    chosen = {"PASSWORD": "room-password", "CONNECT_IP": "172.17.0.1", **settings}
    for name, value in chosen.items():
        monkeypatch.setenv(f"WD_TEACH_HUB_{name}", value)
    return PyFileConfigLoader("jupyterhub_config.py", path=str(HUB)).load_config()


def test_hub_spawns_the_workshop_image_with_dockerspawner_and_culls_idle_seats(monkeypatch):
    c = load_hub_config(monkeypatch)
    assert c.JupyterHub.spawner_class == "dockerspawner.DockerSpawner"
    assert c.DockerSpawner.image == "wd-teach:latest"
    assert c.DockerSpawner.cmd == ["jupyterhub-singleuser"]  # the entrypoint's hub branch
    assert "  jupyterhub-singleuser)" in (DOCKER / "entrypoint.sh").read_text()
    assert list(c.DockerSpawner.volumes.values()) == ["/home/learner/work",
                                                      "/srv/nbgrader/exchange"]
    work, exchange = c.DockerSpawner.volumes
    assert "{username}" in work and "{" not in exchange  # a volume per learner, one exchange
    assert c.DockerSpawner.hub_connect_url == "http://172.17.0.1:8081"
    assert c.DockerSpawner.extra_host_config["device_requests"] == [
        {"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]  # shared: every GPU
    culler = next(s for s in c.JupyterHub.services if s["name"] == "idle-culler")
    assert culler["command"][1:3] == ["-m", "jupyterhub_idle_culler"]
    assert "--timeout=3600" in culler["command"]
    role = next(r for r in c.JupyterHub.load_roles if r["services"] == ["idle-culler"])
    assert {"list:users", "read:users:activity", "delete:servers"} <= set(role["scopes"])


def needs_the_hub_packages():
    """The hub's own packages come with the dev extra (pip install -e ".[dev]"), which CI
    installs; a machine without them cannot load the hub's classes."""
    pytest.importorskip("jupyterhub.authenticators.shared",
                        reason="needs JupyterHub 5.3 or newer: pip install -e '.[dev]'")
    pytest.importorskip("dockerspawner", reason="needs dockerspawner: pip install -e '.[dev]'")


def test_hub_logs_in_with_the_rooms_shared_password(monkeypatch):
    needs_the_hub_packages()
    c = load_hub_config(monkeypatch, ADMINS="teacher", ADMIN_PASSWORD="t" * 32)
    assert c.JupyterHub.authenticator_class == "shared-password"
    assert c.SharedPasswordAuthenticator.user_password == "room-password"
    assert c.Authenticator.admin_users == {"teacher"}
    assert c.SharedPasswordAuthenticator.admin_password == "t" * 32
    entry = importlib.metadata.entry_points(group="jupyterhub.authenticators")["shared-password"]
    assert entry.value.endswith("SharedPasswordAuthenticator")


def test_hub_config_sets_only_traits_its_classes_have(monkeypatch):
    """A misspelt setting would be ignored with a warning: every one must be a real trait."""
    needs_the_hub_packages()
    from dockerspawner import DockerSpawner
    from jupyterhub.app import JupyterHub
    from jupyterhub.auth import Authenticator
    from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
    from jupyterhub.proxy import ConfigurableHTTPProxy
    from jupyterhub.spawner import Spawner

    classes = {cls.__name__: cls for cls in (DockerSpawner, JupyterHub, Authenticator,
                                             SharedPasswordAuthenticator, ConfigurableHTTPProxy,
                                             Spawner)}
    c = load_hub_config(monkeypatch, GPUS="per-seat", GPU_IDS="0,1", ADMINS="teacher",
                        ADMIN_PASSWORD="t" * 32)
    for section, values in c.items():
        known = classes[section].class_trait_names(config=True)
        assert set(values) <= set(known), f"{section} has no {set(values) - set(known)}"


class FakeSpawner:
    """What the per-seat GPU hook uses of DockerSpawner: the engine's running containers."""

    def __init__(self, user: str, running: list[dict]):
        self.user = type("User", (), {"name": user})()
        self.container_name = f"jupyter-{user}"
        self.extra_create_kwargs, self.extra_host_config = {}, {}
        self.log = type("Log", (), {"info": staticmethod(lambda *args: None)})()
        self._running = running

    async def docker(self, method, **kwargs):
        assert method == "containers" and kwargs == {"filters": {"label": "wd-teach.gpu"}}
        return self._running


def test_hub_gives_each_seat_a_gpu_of_its_own_when_asked(monkeypatch):
    import asyncio

    c = load_hub_config(monkeypatch, GPUS="per-seat", GPU_IDS="0,1")
    assert c.JupyterHub.active_server_limit == 2
    give, take_back = c.Spawner.pre_spawn_hook, c.Spawner.post_stop_hook
    running = [{"Names": ["/jupyter-ada"], "Labels": {"wd-teach.gpu": "0"}}]
    bob = FakeSpawner("bob", running)
    asyncio.run(give(bob))
    assert bob.extra_host_config["device_requests"] == [
        {"driver": "nvidia", "device_ids": ["1"], "capabilities": [["gpu"]]}]
    assert bob.extra_create_kwargs["labels"] == {"wd-teach.gpu": "1"}
    with pytest.raises(RuntimeError, match="Every GPU of this host"):
        asyncio.run(give(FakeSpawner("cyd", running)))  # ada holds 0, bob 1 (starting)
    take_back(bob)
    cyd = FakeSpawner("cyd", running)
    asyncio.run(give(cyd))
    assert cyd.extra_create_kwargs["labels"] == {"wd-teach.gpu": "1"}


def test_hub_tells_each_seat_its_role_and_its_share_of_the_gpu(monkeypatch):
    """The teachers (admins) grade, the others learn (docker/nbgrader_config.py reads the
    role); WD_TEACH_HUB_SEAT_GPU_MEMORY_GB becomes each seat's WD_TEACH_GPU_MEMORY_GB."""
    c = load_hub_config(monkeypatch)
    assert set(c.Spawner.environment) == {"WD_TEACH_ROOM_ROLE"}  # no limit unless asked
    c = load_hub_config(monkeypatch, SEAT_GPU_MEMORY_GB="4")
    role = c.Spawner.environment["WD_TEACH_ROOM_ROLE"]
    seat = lambda admin: type("Spawner", (), {"user": type("User", (), {"admin": admin})()})()
    assert role(seat(True)) == "teacher" and role(seat(False)) == "learner"
    assert c.Spawner.environment["WD_TEACH_GPU_MEMORY_GB"] == "4"


def test_the_image_grades_with_nbgrader_as_its_seats_role_says(monkeypatch):
    """The image installs nbgrader ([grading]) and its seats' settings; a learner submits
    under their hub name (every seat is the user `learner`), a teacher's course is in their
    work folder, and the exchange is the folder the hub's volume is mounted on."""
    from traitlets.config.loader import PyFileConfigLoader

    dockerfile = (DOCKER / "Dockerfile").read_text()
    assert "hub,grading" in dockerfile and "install -d -m 1777 /srv/nbgrader/exchange" in dockerfile
    assert "docker/nbgrader_config.py /opt/venv/etc/jupyter/nbgrader_config.py" in dockerfile

    def seat(**env):
        for name in ("WD_TEACH_ROOM_ROLE", "JUPYTERHUB_USER", "WD_TEACH_WORK"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return PyFileConfigLoader("nbgrader_config.py", path=str(DOCKER)).load_config()

    learner = seat(WD_TEACH_ROOM_ROLE="learner", JUPYTERHUB_USER="ada")
    assert learner.CourseDirectory.student_id == "ada"
    assert learner.CourseDirectory.course_id == "wd-teach"
    assert learner.Exchange.root == "/srv/nbgrader/exchange"
    teacher = seat(WD_TEACH_ROOM_ROLE="teacher", JUPYTERHUB_USER="teacher",
                   WD_TEACH_WORK="/home/learner/work")
    assert teacher.CourseDirectory.root == "/home/learner/work/course"
    assert "student_id" not in teacher.CourseDirectory  # the teacher collects every seat's
    assert teacher.CollectApp.check_owner is False  # every seat is the user `learner`


@pytest.mark.parametrize("settings, says", [
    ({"PASSWORD": ""}, "set WD_TEACH_HUB_PASSWORD"),
    ({"SEAT_GPU_MEMORY_GB": "4GB"}, "SEAT_GPU_MEMORY_GB is each seat's GPU memory in GiB"),
    ({"SEAT_GPU_MEMORY_GB": "0"}, "a number above 0"),
    ({"GPUS": "many"}, "WD_TEACH_HUB_GPUS is one of shared, per-seat, none"),
    ({"IDLE_TIMEOUT": "an hour"}, "WD_TEACH_HUB_IDLE_TIMEOUT must be a whole number"),
    ({"ADMINS": "teacher"}, "set WD_TEACH_HUB_ADMIN_PASSWORD"),
])
def test_hub_config_refuses_bad_settings(monkeypatch, settings, says):
    with pytest.raises(SystemExit, match=says):
        load_hub_config(monkeypatch, **settings)


def test_hub_host_requirements_match_pyproject():
    listed = {canonicalize_name(Requirement(line).name): Requirement(line).specifier
              for line in (HUB / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    extras = PYPROJECT["project"]["optional-dependencies"]
    declared = {canonicalize_name(r.name): r.specifier
                for r in map(Requirement, extras["dev"] + extras["hub"])}
    assert listed == {name: declared[name] for name in listed}
    assert set(listed) == {"jupyterhub", "dockerspawner", "jupyterhub-idle-culler"}


def test_z2jh_values_give_each_seat_a_gpu_the_image_and_culling():
    values = yaml.safe_load((HUB / "z2jh-values.yaml").read_text())
    assert set(values) <= {"hub", "proxy", "singleuser", "cull", "prePuller", "scheduling",
                           "ingress", "custom", "debug", "rbac", "global"}
    seat = values["singleuser"]
    assert seat["extraResource"]["limits"] == {"nvidia.com/gpu": "1"}
    assert seat["image"]["name"] and seat["image"]["tag"]
    assert seat["cmd"] == "jupyterhub-singleuser" and seat["defaultUrl"] == "/lab"
    # The image's user and work folder, as docker/Dockerfile makes them.
    assert f"--uid {seat['uid']} " in DOCKERFILE and seat["fsGid"] == seat["uid"]
    assert f"WD_TEACH_WORK={seat['storage']['homeMountPath']} " in DOCKERFILE
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] > 0
    assert values["hub"]["config"]["JupyterHub"]["authenticator_class"] == "shared-password"


def test_the_quick_start_ends_with_a_hint_that_works_in_a_fresh_shell():
    """scripts/start.sh activates .venv only for itself: a bare `jupyter lab` in the shell
    that ran it is not found, or is another one."""
    script = (REPO / "scripts" / "start.sh").read_text()
    hints = [line for line in script.splitlines() if line.startswith('echo "Next:')]
    assert hints and all(".venv/bin/jupyter lab notebooks/" in hint for hint in hints)


def test_the_gpu_checks_test_workers_say_what_ran_and_where_a_long_test_waits(tmp_path):
    """tests/conftest.py, under WD_TEACH_TEST_PROGRESS, logs each test's start and end and
    dumps the stacks of a test still running after WD_TEACH_TEST_STACKS_AFTER seconds."""
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_wait.py").write_text(
        "import time\n\n\ndef test_quick():\n    pass\n\n\n"
        "def test_waits_in_here():\n    time.sleep(1.5)\n")
    progress = tmp_path / "progress"
    # The inner pytest is a plain run (its log is main.tsv) even when this test runs in an
    # xdist worker, whose PYTEST_XDIST_* variables it would otherwise inherit.
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_XDIST")}
    env.update(WD_TEACH_TEST_PROGRESS=str(progress), WD_TEACH_TEST_STACKS_AFTER="0.5")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "test_wait.py"], cwd=tmp_path, env=env, check=True, capture_output=True)
    assert (progress / "collected.txt").read_text() == "2\n"
    lines = [line.split("\t") for line in (progress / "main.tsv").read_text().splitlines()]
    assert [(what, test) for what, _, test in lines] == [
        ("start", "test_wait.py::test_quick"), ("end", "test_wait.py::test_quick"),
        ("start", "test_wait.py::test_waits_in_here"), ("end", "test_wait.py::test_waits_in_here")]
    stacks = (progress / "main.stacks").read_text()
    assert "test_wait.py::test_waits_in_here is past 0.5 s" in stacks
    assert 'test_wait.py", line 9, in test_waits_in_here' in stacks
    assert "test_quick" not in stacks, "a quick test's stacks were dumped"


def test_the_gpu_check_summary_names_the_tests_a_cut_off_part_was_running(tmp_path, capsys):
    summary = _load_script("gpu_check_summary")
    junit = ('<testsuites><testsuite tests="{}" failures="{}" errors="0" skipped="1"/>'
             '</testsuites>')
    for name in summary.PARTS:
        cut = name == "tests"
        (tmp_path / f"{name}.rc").write_text("124" if cut else "0")
        (tmp_path / f"{name}.seconds").write_text("540" if cut else "300")
        (tmp_path / f"{name}.xml").write_text(junit.format(10, 0))
    (tmp_path / "progress").mkdir()
    (tmp_path / "progress" / "gw0.tsv").write_text(
        "start\t100.0\ttests/test_a.py::test_done\nend\t110.0\ttests/test_a.py::test_done\n"
        "start\t110.0\ttests/test_a.py::test_stuck\n")
    (tmp_path / "progress" / "gw1.tsv").write_text(
        "start\t120.0\ttests/test_b.py::test_late\nend\t400.0\ttests/test_b.py::test_late\n")
    (tmp_path / "progress" / "collected.txt").write_text("12\n")
    assert not summary.main(tmp_path, "a test GPU")
    out = capsys.readouterr().out
    assert "tests without a result: 2 of the 12 collected" in out
    assert "(exit 124)" in out and "GPU CHECK FAILED" in out
    assert "290 s  tests/test_a.py::test_stuck" in out
    assert "test_done" not in out and "test_late" not in out

    (tmp_path / "tests.rc").write_text("0")
    (tmp_path / "progress" / "gw0.tsv").write_text("")
    assert not summary.main(tmp_path, "a test GPU")  # exit 0, but 2 tests never reported
    capsys.readouterr()
    (tmp_path / "progress" / "collected.txt").write_text("10\n")
    assert summary.main(tmp_path, "a test GPU")
    out = capsys.readouterr().out
    assert "GPU CHECK PASSED" in out and "still running" not in out
    assert "without a result" not in out
    (tmp_path / "notebooks-numba-2.xml").write_text(junit.format(10, 1))
    assert not summary.main(tmp_path, "a test GPU")


def _load_script(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_under_the_gpu_check_every_process_that_imports_wd_teach_says_where_it_waits(tmp_path):
    """A notebook's kernel or a seed's process, started by a test: wd_teach/_watch.py writes
    its stacks every WD_TEACH_TEST_STACKS_AFTER seconds to the progress folder."""
    env = {**os.environ, "WD_TEACH_TEST_PROGRESS": str(tmp_path),
           "WD_TEACH_TEST_STACKS_AFTER": "0.4"}
    waiting = "import time, wd_teach\ntime.sleep(1.5)\n"
    done = subprocess.run([sys.executable, "-c", waiting], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (stacks,) = tmp_path.glob("pid-*.stacks")
    text = stacks.read_text()
    assert text.startswith("-c") and 'File "<string>", line 2, in <module>' in text
    quiet = {k: v for k, v in env.items() if k != "WD_TEACH_TEST_PROGRESS"}
    subprocess.run([sys.executable, "-c", waiting], env=quiet, check=True, timeout=300,
                   cwd=tmp_path / "..")
    assert len(list(tmp_path.glob("pid-*.stacks"))) == 1  # nothing without the setting


def test_the_notebook_runs_are_spread_evenly_among_the_others_for_parallel_workers():
    """tests/conftest.py's spread(): under pytest-xdist the notebooks' runs stand evenly
    apart, so that no worker's run of neighbouring tests holds many."""
    import importlib.util

    # by its path: the name `conftest` may already be tests/gpu's
    spec = importlib.util.spec_from_file_location("tests_conftest", REPO / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    spread = module.spread
    items = [f"t{i}" for i in range(20)] + ["slow0", "slow1", "slow2", "slow3"]
    placed = spread(items, lambda name: name.startswith("slow"))
    assert sorted(placed) == sorted(items) and len(placed) == len(items)
    at = [placed.index(f"slow{k}") for k in range(4)]
    assert at == sorted(at) and at[0] > 0 and at[-1] < len(placed) - 1
    gaps = [b - a for a, b in zip(at, at[1:], strict=False)]
    assert max(gaps) - min(gaps) <= 1, placed
    assert [n for n in placed if not n.startswith("slow")] == items[:20]
    assert spread(["a", "b"], lambda name: False) == ["a", "b"]
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "tests/test_notebooks.py"],
                          cwd=REPO, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTEST_XDIST_WORKER": "gw0"})
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    twice = [i for i, line in enumerate(ids) if "runs_twice" in line]
    gaps = [b - a for a, b in zip(twice, twice[1:], strict=False)]
    assert len(twice) >= 10 and min(gaps) > 1 and max(gaps) - min(gaps) <= 1


def test_a_progress_folder_that_cannot_be_written_never_stops_the_import(tmp_path):
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    env = {**os.environ, "WD_TEACH_TEST_PROGRESS": str(blocked / "progress"),
           "WD_TEACH_TEST_STACKS_AFTER": "not a number"}
    done = subprocess.run([sys.executable, "-c", "import wd_teach; print('imported')"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "imported" in done.stdout, done.stderr
