"""The instance templates every installation ships (global, built in).

Image choices:

- JupyterLab and PyTorch on NVIDIA use the same NGC image, `nvcr.io/nvidia/pytorch:25.01-py3`:
  NVIDIA's own PyTorch build (CUDA 12.8, Python 3.12) that ships JupyterLab and runs as root (hence
  `--allow-root`), publicly pullable without an NGC key. One image for both means a node that has
  pulled it for one starts the other at once. CUDA 12.8 supports Hopper and Blackwell and runs on
  R570+ drivers, and on older R525+ ones through CUDA minor-version compatibility. As in Kubernetes,
  a command replaces the image's entrypoint: NGC's entrypoint script (a banner and driver checks)
  does not run, which JupyterLab and a shell do not need.
- PyTorch on AMD: AMD's `rocm/pytorch` image, pinned to a full tag (ROCm 6.4.4, Ubuntu 24.04,
  Python 3.12, PyTorch 2.7.1) rather than `latest`, so that two instances of the template run the
  same software.
- vLLM: the project's `vllm/vllm-openai` image, serving a small model (Qwen2.5 0.5B Instruct, about
  1 GB, fits any GPU) so that the template works as is; users change the model in the command.
- Ubuntu on CPU: `ubuntu:24.04`, the current LTS.
- CANN on Ascend: Huawei's CANN development images on quay.io (`quay.io/ascend/cann`, the ones
  GPUStack's catalog ships), pinned to CANN 8.5.0 on Ubuntu 22.04 with Python 3.11. CANN's images are
  built per chip (its operator libraries and the driver's user-space parts differ between the
  training 910B and the inference 310P), so there is one template per chip: launched in a compute
  instance of that chip, its pod asks for the chip's own resource (`huawei.com/Ascend910` for the
  910B, `huawei.com/Ascend310P`; see core/gpu_resources.py). The images set CANN's environment
  (`set_env.sh`) for login shells; the device plugin and the Ascend Docker Runtime mount the NPUs
  and the driver.

The shells (PyTorch, Ubuntu, CANN) run `sleep infinity` with SSH access declared on port 22 (user root):
gpupaas starts its own SSH server beside the command, with the owner's keys. Hugging Face downloads go
to the workspace (`HF_HOME`), which keeps them across stop/start.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupaas.instance_templates.spec import Port, ServiceSpec, SshAccess

__all__ = ["BUILTIN_INSTANCE_TEMPLATES", "BuiltinInstanceTemplate", "builtin_instance_template"]

NGC_PYTORCH_IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
ROCM_PYTORCH_IMAGE = "rocm/pytorch:rocm6.4.4_ubuntu24.04_py3.12_pytorch_release_2.7.1"
VLLM_IMAGE = "vllm/vllm-openai:v0.11.0"
VLLM_DEFAULT_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
UBUNTU_IMAGE = "ubuntu:24.04"
CANN_910B_IMAGE = "quay.io/ascend/cann:8.5.0-910b-ubuntu22.04-py3.11"
CANN_310P_IMAGE = "quay.io/ascend/cann:8.5.0-310p-ubuntu22.04-py3.11"

_HF_HOME = ("HF_HOME", "/workspace/.cache/huggingface")
# The shells are reached over SSH: gpupaas starts an SSH server beside `sleep infinity`.
_SSH_PORT = Port(name="SSH", port=22)
_SSH = SshAccess(port="SSH", user="root")


@dataclass(frozen=True)
class BuiltinInstanceTemplate:
    name: str
    display_name: str
    description: str
    spec: ServiceSpec


BUILTIN_INSTANCE_TEMPLATES: tuple[BuiltinInstanceTemplate, ...] = (
    BuiltinInstanceTemplate(
        name="jupyterlab-pytorch",
        display_name="JupyterLab (PyTorch, NVIDIA)",
        description=(
            "JupyterLab on NVIDIA's PyTorch container (NGC, CUDA 12.8, Python 3.12). Notebooks live in "
            "/workspace, which is kept across stop and start. The JUPYTER link logs you in with the "
            "instance's generated token."
        ),
        spec=ServiceSpec(
            vendor="NVIDIA",
            image=NGC_PYTORCH_IMAGE,
            command=(
                "jupyter",
                "lab",
                "--ServerApp.token={{generated_token}}",
                "--notebook-dir=/workspace",
                "--allow-root",
                "--ip=0.0.0.0",
                "--port=8888",
            ),
            ports=(Port(name="jupyter", port=8888, access_params=(("token", "{{generated_token}}"),)),),
            env=(_HF_HOME,),
        ),
    ),
    BuiltinInstanceTemplate(
        name="pytorch",
        display_name="PyTorch (NVIDIA)",
        description=(
            "A shell in NVIDIA's PyTorch container (NGC, CUDA 12.8, Python 3.12): the container waits, "
            "you connect over SSH and run your own code. Work in /workspace, which is kept "
            "across stop and start."
        ),
        spec=ServiceSpec(
            vendor="NVIDIA",
            image=NGC_PYTORCH_IMAGE,
            command=("sleep", "infinity"),
            ports=(_SSH_PORT,),
            env=(_HF_HOME,),
            ssh=_SSH,
        ),
    ),
    BuiltinInstanceTemplate(
        name="pytorch-rocm",
        display_name="PyTorch (AMD ROCm)",
        description=(
            "A shell in AMD's PyTorch container (ROCm 6.4, PyTorch 2.7, Python 3.12) for Instinct "
            "GPUs: the container waits, you connect over SSH and run your own code. Work in "
            "/workspace, which is kept across stop and start."
        ),
        spec=ServiceSpec(
            vendor="AMD",
            image=ROCM_PYTORCH_IMAGE,
            command=("sleep", "infinity"),
            ports=(_SSH_PORT,),
            env=(_HF_HOME,),
            ssh=_SSH,
        ),
    ),
    BuiltinInstanceTemplate(
        name="vllm-openai",
        display_name="vLLM OpenAI-compatible server (NVIDIA)",
        description=(
            f"vLLM serving {VLLM_DEFAULT_MODEL} through the OpenAI API at /v1 (API docs at /docs). "
            "Requests need the header Authorization: Bearer <token>, the generated token in the "
            "command. Change the model in the command; downloaded models are kept in /workspace."
        ),
        spec=ServiceSpec(
            vendor="NVIDIA",
            image=VLLM_IMAGE,
            command=(
                "vllm",
                "serve",
                VLLM_DEFAULT_MODEL,
                "--host",
                "0.0.0.0",  # noqa: S104  # in a container: the Service must reach the server
                "--port",
                "8000",
                "--api-key",
                "{{generated_token}}",
            ),
            ports=(Port(name="http", port=8000),),
            env=(_HF_HOME,),
        ),
    ),
    BuiltinInstanceTemplate(
        name="ubuntu",
        display_name="Ubuntu 24.04 (CPU)",
        description=(
            "A plain Ubuntu 24.04 shell without GPUs: the container waits, you connect over SSH. "
            "Work in /workspace, which is kept across stop and start."
        ),
        spec=ServiceSpec(
            vendor="CPU", image=UBUNTU_IMAGE, command=("sleep", "infinity"), ports=(_SSH_PORT,), ssh=_SSH
        ),
    ),
    BuiltinInstanceTemplate(
        name="cann-910b",
        display_name="CANN 8.5 (Ascend 910B)",
        description=(
            "A shell in Huawei's CANN 8.5.0 container (Ubuntu 22.04, Python 3.11) for Ascend 910B NPUs "
            "(Atlas 800T A2, 900 A2): the container waits, you connect over SSH and run your own "
            "code. Launch it in a compute instance of 910B NPUs; for 310P ones, choose CANN (Ascend "
            "310P). Work in /workspace, which is kept across stop and start."
        ),
        spec=ServiceSpec(
            vendor="ASCEND",
            image=CANN_910B_IMAGE,
            command=("sleep", "infinity"),
            env=(_HF_HOME,),
            ports=(_SSH_PORT,),
            ssh=_SSH,
        ),
    ),
    BuiltinInstanceTemplate(
        name="cann-310p",
        display_name="CANN 8.5 (Ascend 310P)",
        description=(
            "A shell in Huawei's CANN 8.5.0 container (Ubuntu 22.04, Python 3.11) for Ascend 310P "
            "inference NPUs (Atlas 300I Pro, 300I Duo, 300V): the container waits, you connect over SSH "
            "and run your own code. Launch it in a compute instance of 310P NPUs; for 910B ones, "
            "choose CANN (Ascend 910B). Work in /workspace, which is kept across stop and start."
        ),
        spec=ServiceSpec(
            vendor="ASCEND",
            image=CANN_310P_IMAGE,
            command=("sleep", "infinity"),
            env=(_HF_HOME,),
            ports=(_SSH_PORT,),
            ssh=_SSH,
        ),
    ),
)


def builtin_instance_template(name: str) -> BuiltinInstanceTemplate | None:
    return next((template for template in BUILTIN_INSTANCE_TEMPLATES if template.name == name), None)
