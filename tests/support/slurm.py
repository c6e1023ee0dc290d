"""A real single-node Slurm cluster for the zoo's tests, started and stopped by the tests.

Debian's `slurm-wlm` and `munge` (`apt-get install slurm-wlm munge`; `.ci/run` installs them): a `munged` with its own
key and socket, `slurmctld` and `slurmd` as root in the foreground with a slurm.conf of their own (free ports, state and
spool in a temporary folder, `ProctrackType=proctrack/linuxproc`, `TaskPlugin=task/none`: no cgroups, so it runs in a
container), no accounting (the zoo reads job states from squeue then). `SLURM_CONF` points the clients (sbatch,
squeue, scancel, srun) at it. Where Slurm is not installed (or this is not root) the tests that need it are skipped with
a message, unless BIASLENS_REQUIRE_SLURM=1 (CI), where that is a failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "srun", "sinfo")
#: The test node claims this many CPUs (SlurmdParameters=config_overrides): jobs of one CPU each run side by side.
NODE_CPUS = 4
#: Seconds a requeued job waits before it may start again (AuthInfo's cred_expire; Slurm's default is 120 s): a job
#: submitit requeues at its time limit starts again within seconds here.
CRED_EXPIRE_S = 10


def missing() -> str | None:
    """Why a cluster cannot be started here, or None."""
    absent = [name for name in DAEMONS + CLIENTS if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]
    if absent:
        return f"Slurm is not installed ({', '.join(absent)} not found: apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "the test cluster's slurmctld and slurmd run as root, and this is not root"
    return None


def skip_or_fail(message: str) -> None:
    if os.environ.get("BIASLENS_REQUIRE_SLURM") == "1":
        pytest.fail(message + "; BIASLENS_REQUIRE_SLURM=1 makes this a failure")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@dataclass
class Cluster:
    """A running test cluster: its folder, its slurm.conf and the daemons' processes."""

    root: Path
    conf: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *command: str, check: bool = True) -> str:
        return subprocess.run(list(command), env=self.env, capture_output=True, text=True, check=check, timeout=60).stdout

    def logs(self) -> str:
        out = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(errors="replace").splitlines()[-20:]
            out.append(f"== {path.name}\n" + "\n".join(text))
        return "\n".join(out)

    def stop(self) -> None:
        """Cancel every job, wait for their steps to end (so no slurmstepd outlives slurmd), then stop the daemons."""
        subprocess.run(["scancel", "--full", "-u", "root"], env=self.env, capture_output=True, timeout=30, check=False)
        with contextlib.suppress(TimeoutError):
            _wait(lambda: self.run("squeue", "-h", "-o", "%i", check=False).strip() == "", 30, "jobs still running")
        time.sleep(1)
        subprocess.run(["scontrol", "shutdown"], env=self.env, capture_output=True, timeout=30, check=False)
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)


def start_cluster(root: Path, timeout: float = 60.0) -> Cluster:
    """Start munged, slurmctld and slurmd in `root`; return once the node is idle (else stop them and raise)."""
    for sub in ("munge", "state", "spool", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o711)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = root / "munge" / "munge.socket"
    host = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=biaslenstest",
                f"SlurmctldHost={host}(127.0.0.1)",
                f"SlurmctldPort={_free_port()}",
                f"SlurmdPort={_free_port()}",
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={sock},cred_expire={CRED_EXPIRE_S}",
                f"StateSaveLocation={root / 'state'}",
                f"SlurmdSpoolDir={root / 'spool'}",
                f"SlurmctldPidFile={root / 'slurmctld.pid'}",
                f"SlurmdPidFile={root / 'slurmd.pid'}",
                f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
                f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_CPU",
                "SchedulerType=sched/backfill",
                "SchedulerParameters=sched_interval=2,bf_interval=2",
                "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageType=accounting_storage/none",
                "JobCompType=jobcomp/none",
                "MpiDefault=none",
                "ReturnToService=2",
                "KillWait=2",
                "MinJobAge=3600",
                "SlurmdParameters=config_overrides",
                f"NodeName={host} NodeAddr=127.0.0.1 CPUs={NODE_CPUS} RealMemory=8000 State=UNKNOWN",
                f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )
    )
    cluster = Cluster(root, conf)
    log = root / "log"

    def daemon(name: str, *args: str) -> None:
        out = (log / f"{name}.out").open("wb")
        cluster.processes.append(subprocess.Popen([_binary(name), *args], stdout=out, stderr=subprocess.STDOUT, env=cluster.env))

    try:
        daemon(
            "munged",
            "-F",
            "-f",
            f"--key-file={key}",
            f"--socket={sock}",
            f"--pid-file={root / 'munge' / 'munged.pid'}",
            f"--log-file={log / 'munged.log'}",
            f"--seed-file={root / 'munge' / 'seed'}",
        )
        _wait(lambda: sock.exists(), timeout, "munged did not create its socket")
        daemon("slurmctld", "-D", "-i", "-f", str(conf))
        _wait(lambda: cluster.run("sinfo", "-h", check=False) != "", timeout, "slurmctld did not answer")
        daemon("slurmd", "-D", "-f", str(conf))
        _wait(lambda: cluster.run("sinfo", "-h", "-o", "%T", check=False).strip() == "idle", timeout, "the node did not become idle")
    except BaseException:
        logs = cluster.logs()
        cluster.stop()
        raise RuntimeError(f"the test cluster did not start:\n{logs}") from None
    return cluster


def _wait(condition, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (OSError, subprocess.SubprocessError):
            pass
        time.sleep(0.3)
    raise TimeoutError(message)
