"""scripts/deps.sh where cuDNN is missing: it asks apt only for a package apt can install, else the
nvidia-cudnn wheel of the toolkit's CUDA major (CONVTUNE_DEPS_HIDE=cudnn hides the machine's cuDNN;
CONVTUNE_DEPS_DRY_RUN=1 prints the plan and installs nothing)."""

import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPS = os.path.join(ROOT, "scripts", "deps.sh")


def nvcc():
    return shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def dry_run(**env):
    out = subprocess.run(["bash", DEPS, "build"], env={**os.environ, "CONVTUNE_DEPS_DRY_RUN": "1", **env},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def apt_can_install(package):
    if not shutil.which("apt-cache"):
        return False
    policy = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True).stdout
    return re.search(r"Candidate: [^(]", policy) is not None


@pytest.mark.skipif(nvcc() is None, reason="no CUDA toolkit here")
def test_missing_cudnn_asks_for_a_package_that_exists():
    release = subprocess.run([nvcc(), "--version"], capture_output=True, text=True).stdout
    major = re.search(r"release (\d+)\.", release).group(1)
    plan = dry_run(CONVTUNE_DEPS_HIDE="cudnn", PATH=os.path.dirname(nvcc()) + ":" + os.environ["PATH"])
    apt_package, wheel = f"cudnn9-cuda-{major}", f"nvidia-cudnn-cu{major}"
    if apt_can_install(apt_package):
        assert apt_package in plan.split("apt:")[1].split(";")[0] and wheel not in plan, plan
    else:
        assert apt_package not in plan and wheel in plan.split("pip:")[1], plan

