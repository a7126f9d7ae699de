"""Replicas of the retrieval service on a Ray cluster, behind one HTTP front (`serve retrieval --replicas N`).

Plain Ray actors, no Ray Serve: each replica is a `ReplicaWorker` actor that loads the index into its own
`RetrievalService` (validation, micro-batching, cache), placed with `num_cpus` / `num_gpus`. The front is the
usual `/retrieve` server (retrieval/server.py, same protocol, token and limits) over a `ReplicaPool`, which has the
service's interface and sends each request to the ready replica with the fewest requests in flight.

A replica that dies is routed around and replaced:
- a request whose replica dies (`ActorDiedError`) is sent again to another ready replica at once, so the caller
  sees no error while one replica is left;
- a health thread pings every replica each `health_interval_s` (and at once after a death), kills and replaces
  the dead ones with a new actor, and routes to the new one once its index is loaded (`describe()` answered);
- with no replica ready the front answers 503 (clients retry 5xx).

The actors are named `retrieval-<pool>-<n>` in the Ray namespace `agentic_verl_retrieval` and die with the front's
Ray driver (not detached). /health lists them with their state, pid and node.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from agentic_verl.retrieval.service import Limits, RequestError, ServiceMetrics, validate

logger = logging.getLogger(__name__)

NAMESPACE = "agentic_verl_retrieval"


class ReplicaWorker:
    """One replica (a Ray actor): a `RetrievalService` over `index_dir` (or a `replay` file)."""

    def __init__(
        self, index_dir: str | None, replay: str | None, cache_size: int, limits: dict, max_batch_queries: int
    ):
        from agentic_verl.retrieval.index import load_index
        from agentic_verl.retrieval.service import RetrievalService

        self.service = RetrievalService(
            load_index(index_dir) if index_dir else None,
            cache_size=cache_size,
            limits=Limits(**limits),
            replay=replay,
            max_batch_queries=max_batch_queries,
        )

    async def describe(self) -> dict:
        import ray

        return {**self.service.describe(), "pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id()}

    async def ping(self) -> bool:
        return self.service.healthy()

    async def search(self, queries: list[str], topk: int) -> tuple[int, Any]:
        """(200, passages per query) or (HTTP status, what went wrong): errors cross the actor boundary as values."""
        try:
            return 200, await self.service.search(queries, topk)
        except RequestError as exc:
            return exc.status, str(exc)
        except Exception as exc:  # a backend failure: the front answers 500 with the reason
            logger.exception("retrieval replica: search failed")
            return 500, f"retrieval failed: {type(exc).__name__}: {exc}"


@dataclass
class _Replica:
    name: str
    handle: Any
    ready_ref: Any  # describe() while starting
    state: str = "starting"  # starting | ready | dead
    info: dict = field(default_factory=dict)
    in_flight: int = 0
    answered: int = 0


class ReplicaPool:
    """N `ReplicaWorker` actors with the `RetrievalService` interface the server uses (search, healthy, describe,
    limits, metrics, close). Needs `ray.init(...)` first; blocks until every replica has loaded the index."""

    def __init__(
        self,
        *,
        index_dir: str | None = None,
        replay: str | None = None,
        replicas: int = 2,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        cache_size: int = 100_000,
        limits: Limits | None = None,
        max_batch_queries: int = 4096,
        startup_timeout_s: float = 600.0,
        health_interval_s: float = 2.0,
        ping_timeout_s: float = 10.0,
    ):
        import ray

        if not ray.is_initialized():
            raise RuntimeError("ReplicaPool needs a Ray connection: call ray.init(...) first")
        if (index_dir is None) == (replay is None):
            raise ValueError("give exactly one of index_dir or replay")
        if replicas < 1 or num_cpus < 0 or num_gpus < 0:
            raise ValueError(
                f"bad replica settings: replicas={replicas} (>=1), num_cpus={num_cpus} (>=0), num_gpus={num_gpus} (>=0)"
            )
        _check_resources(replicas, num_cpus, num_gpus)
        self.limits = limits or Limits()
        self.metrics = ServiceMetrics()
        self.wanted, self.num_cpus, self.num_gpus = replicas, num_cpus, num_gpus
        self.health_interval_s, self.ping_timeout_s = health_interval_s, ping_timeout_s
        self._actor_args = (
            str(index_dir) if index_dir else None,
            str(replay) if replay else None,
            cache_size,
            asdict(self.limits),
            max_batch_queries,
        )
        self._actor_class = ray.remote(ReplicaWorker)
        self._pool_id, self._serial = uuid.uuid4().hex[:8], itertools.count()
        self._lock, self._stop, self._wake = threading.Lock(), threading.Event(), threading.Event()
        self._closed, self._rotation = False, itertools.count()
        self._replicas = [self._start_replica() for _ in range(replicas)]
        self._wait_started(startup_timeout_s)
        first = dict(self._replicas[0].info)
        self.meta, self.mode = first["index"], first["mode"]
        self._described = {k: v for k, v in first.items() if k not in ("pid", "node_id", "cache")}
        self._described["cache"] = {"size": cache_size, "per": "replica"}
        self._ray_address = ray.get_runtime_context().gcs_address
        self._monitor = threading.Thread(target=self._watch, name="retrieval-replica-health", daemon=True)
        self._monitor.start()

    # -- the service interface ------------------------------------------------------------------
    def healthy(self) -> bool:
        return not self._closed and any(r.state == "ready" for r in self._replicas)

    def describe(self) -> dict:
        """What /health reports: the replicas' index meta, mode and limits, and each replica's state."""
        with self._lock:
            replicas = [
                {
                    "name": r.name,
                    "state": r.state,
                    "in_flight": r.in_flight,
                    "answered": r.answered,
                    "pid": r.info.get("pid"),
                    "node_id": r.info.get("node_id"),
                }
                for r in self._replicas
            ]
        return {
            **self._described,
            "replicas": {
                "wanted": self.wanted,
                "ready": sum(r["state"] == "ready" for r in replicas),
                "replaced": self.metrics.counters.get("replicas_replaced", 0),
                "ray_address": self._ray_address,
                "namespace": NAMESPACE,
                "num_cpus": self.num_cpus,
                "num_gpus": self.num_gpus,
                "actors": replicas,
            },
        }

    async def search(self, queries: list[str], topk: int = 3) -> list:
        """Best-first passages per query from one ready replica; another one if that replica dies meanwhile."""
        from ray.exceptions import ActorDiedError, RayActorError

        if self._closed:
            raise RequestError(503, "the retrieval service is closed")
        validate(queries, topk, self.limits)
        self.metrics.count("queries", len(queries))
        tried: set[str] = set()
        while (replica := self._pick(tried)) is not None:
            tried.add(replica.name)
            replica.in_flight += 1
            try:
                status, result = await replica.handle.search.remote(queries, topk)
            except RayActorError as exc:  # died (replace it) or unreachable for now (the pings decide)
                if isinstance(exc, ActorDiedError):
                    self._lost(replica, exc)
                self.metrics.count("replica_retries")
                continue
            finally:
                replica.in_flight -= 1
            if status != 200:
                raise RequestError(status, result)
            replica.answered += 1
            return result
        self.metrics.count("no_replica")
        raise RequestError(
            503, f"no retrieval replica is ready ({self._summary()}); dead ones are being replaced, retry shortly"
        )

    def close(self) -> None:
        """Stop the health thread and kill the actors (the Ray connection stays; the caller owns it)."""
        import ray

        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._wake.set()
        if getattr(self, "_monitor", None) is not None:
            self._monitor.join(timeout=30)
        for replica in self._replicas:
            _kill(ray, replica.handle)

    # -- replicas ---------------------------------------------------------------------------------
    def _start_replica(self) -> _Replica:
        name = f"retrieval-{self._pool_id}-{next(self._serial)}"
        handle = self._actor_class.options(
            name=name, namespace=NAMESPACE, num_cpus=self.num_cpus, num_gpus=self.num_gpus, max_restarts=0
        ).remote(*self._actor_args)
        return _Replica(name, handle, handle.describe.remote())

    def _wait_started(self, timeout_s: float) -> None:
        import ray
        from ray.exceptions import GetTimeoutError, RayError

        try:
            infos = ray.get([r.ready_ref for r in self._replicas], timeout=timeout_s)
        except GetTimeoutError:
            self.close()
            raise RuntimeError(
                f"{self.wanted} retrieval replica(s) not ready after {timeout_s:.0f}s (num_cpus="
                f"{self.num_cpus}, num_gpus={self.num_gpus} each; Ray's free resources: "
                f"{ray.available_resources()})"
            ) from None
        except RayError as exc:
            self.close()
            raise RuntimeError(f"a retrieval replica failed to start: {exc}") from None
        for replica, info in zip(self._replicas, infos, strict=True):
            replica.info, replica.state = info, "ready"

    def _pick(self, tried: set[str]) -> _Replica | None:
        ready = [r for r in self._replicas if r.state == "ready" and r.name not in tried]
        if not ready:
            return None
        turn = next(self._rotation)
        return min(ready, key=lambda r: (r.in_flight, (self._replicas.index(r) - turn) % len(self._replicas)))

    def _lost(self, replica: _Replica, why: object) -> None:
        with self._lock:
            if replica.state == "dead":
                return
            replica.state = "dead"
        logger.warning(
            "retrieval replica %s died (%s); routing around it and replacing it",
            replica.name,
            str(why).splitlines()[0][:300],
        )
        self._wake.set()

    def _summary(self) -> str:
        states = [r.state for r in self._replicas]
        return ", ".join(f"{states.count(s)} {s}" for s in ("ready", "starting", "dead") if s in states)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.health_interval_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.check()
            except Exception:  # the health thread must outlive one bad round
                logger.exception("retrieval replica health check failed")

    def check(self) -> None:
        """One health round: finish starting replicas, ping the ready ones, replace the dead."""
        import ray
        from ray.exceptions import ActorDiedError, RayError

        for replica in [r for r in self._replicas if r.state == "starting"]:
            if ray.wait([replica.ready_ref], timeout=0)[0]:
                try:
                    replica.info, replica.state = ray.get(replica.ready_ref), "ready"
                    logger.warning("retrieval replica %s is ready (replacement)", replica.name)
                except RayError as exc:
                    self._lost(replica, f"failed to start: {exc}")
        pings = [(r, r.handle.ping.remote()) for r in self._replicas if r.state == "ready"]
        if pings:
            answered, _ = ray.wait([ref for _, ref in pings], num_returns=len(pings), timeout=self.ping_timeout_s)
            for replica, ref in pings:
                if ref not in answered:
                    logger.warning(
                        "retrieval replica %s did not answer a ping within %ss", replica.name, self.ping_timeout_s
                    )
                    continue
                try:
                    if not ray.get(ref):
                        self._lost(replica, "its service is not healthy (batcher thread stopped)")
                except ActorDiedError as exc:
                    self._lost(replica, exc)
                except RayError:  # unavailable for now: keep it, the next round decides
                    pass
        with self._lock:
            for i, replica in enumerate(self._replicas):
                if replica.state == "dead" and not self._stop.is_set():
                    _kill(ray, replica.handle)
                    self._replicas[i] = self._start_replica()
                    self.metrics.count("replicas_replaced")


def _check_resources(replicas: int, num_cpus: float, num_gpus: float) -> None:
    import ray

    total = ray.cluster_resources()
    for key, each in (("CPU", num_cpus), ("GPU", num_gpus)):
        if each and replicas * each > total.get(key, 0):
            raise ValueError(
                f"{replicas} replica(s) x {each} {key} need {replicas * each:g} {key}, but the Ray "
                f"cluster has {total.get(key, 0):g}; lower --replicas / --replica-{key.lower()}s or "
                "add nodes"
            )


def _kill(ray, handle) -> None:
    try:
        ray.kill(handle, no_restart=True)
    except Exception:  # already gone
        pass


def start_ray(address: str | None = None, temp_dir: str | None = None) -> None:
    """Connect to the Ray cluster at `address` ("auto", "HOST:PORT"), or start a local one (its session files under
    `temp_dir`, default Ray's /tmp/ray). RAY_AUTH_MODE and the other RAY_* variables are Ray's to read."""
    import ray

    if address:
        if temp_dir:
            raise ValueError("--ray-temp-dir applies only to a Ray instance started here (no --ray-address)")
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=True)
    else:
        ray.init(namespace=NAMESPACE, _temp_dir=temp_dir, include_dashboard=False, log_to_driver=True)
