"""The Ray executor's own logic against a stand-in for Ray (Ray is not installed in the test
environment; tests/test_sweep.py runs the real one where it is): a private local Ray unless a
cluster is named, Ray's errors whole, a run whose worker died run again and said so, the runs'
rounds passed back while they train."""

from __future__ import annotations

import queue
import sys
import types
from concurrent import futures

import pytest
from conftest import TINY, invoke

from fedbench.errors import FedbenchError
from fedbench.identity import run_id
from fedbench.sweep import RayExecutor, grid_configs, make_executor, plan_sweep, run_sweep


class WorkerCrashedError(Exception):
    pass


class FakeRay(types.ModuleType):
    """ray.init / remote / wait / get / cancel / shutdown / util.queue.Queue on threads. Tasks
    of the runs in `crash` raise WorkerCrashedError (a dead worker) that many times first."""

    def __init__(self, crash: dict[str, int] | None = None, init_error=None):
        super().__init__("ray")
        self.crash, self.init_error = dict(crash or {}), init_error
        self.inits: list[tuple] = []
        self.initialized, self.shutdowns, self.options = False, 0, {}
        self.pool = futures.ThreadPoolExecutor(2)

    def is_initialized(self):
        return self.initialized

    def init(self, address=None, **kw):
        self.inits.append((address, kw))
        if self.init_error is not None:
            raise self.init_error
        self.initialized = True

    def shutdown(self):
        self.initialized, self.shutdowns = False, self.shutdowns + 1

    def remote(self, fn):
        ray = self

        class Task:
            def options(self, **kw):
                ray.options = kw
                return self

            def remote(self, cfg_dict, *args):
                rid = run_id(__import__("fedbench.config").config.config_from_dict(cfg_dict))
                if ray.crash.get(rid, 0) > 0:
                    ray.crash[rid] -= 1
                    f = futures.Future()
                    f.set_exception(WorkerCrashedError("The worker died unexpectedly.\n"
                                                       "Its node ran out of memory."))  # fmt: skip
                    return f
                return ray.pool.submit(fn, cfg_dict, *args)

        return Task()

    def wait(self, refs, num_returns=1, timeout=None):
        done, _ = futures.wait(refs, timeout, futures.FIRST_COMPLETED)
        ready = list(done)[:num_returns]
        return ready, [r for r in refs if r not in ready]

    def get(self, ref):
        return ref.result()

    def cancel(self, ref):
        ref.cancel()


@pytest.fixture
def fake_ray(monkeypatch):
    def install(**kw):
        ray = FakeRay(**kw)
        util = types.ModuleType("ray.util")
        q = types.ModuleType("ray.util.queue")
        q.Queue = queue.Queue
        util.queue = q
        ray.util = util
        for name, mod in (("ray", ray), ("ray.util", util), ("ray.util.queue", q)):
            monkeypatch.setitem(sys.modules, name, mod)
        return ray

    return install


def _configs():
    return grid_configs(methods=["fedavg"], seeds=[0, 1], sets={"rounds": "3", **TINY})


def test_a_private_local_ray_unless_a_cluster_is_named(tmp_path, fake_ray, one_thread):
    ray = fake_ray()
    report = run_sweep(plan_sweep(_configs(), tmp_path), tmp_path, RayExecutor(), quiet=True)
    assert report.count("complete") == 2
    assert ray.inits[0][0] == "local" and ray.shutdowns == 1  # started for the sweep, stopped
    ray = fake_ray()
    RayExecutor(address="auto").run([], tmp_path, set(), print, print)
    assert ray.inits[0][0] == "auto" and ray.shutdowns == 0  # someone else's: left running


def test_rays_error_is_shown_whole(tmp_path, fake_ray):
    message = "Version mismatch: cluster 2.9.0, this 2.40.0.\nUse that Ray, or install 2.9.0."
    fake_ray(init_error=RuntimeError(message))
    with pytest.raises(FedbenchError) as e:
        RayExecutor(address="10.0.0.1:6379").run(_configs(), tmp_path, set(), print, print)
    text = str(e.value)
    assert "\n" not in text and "10.0.0.1:6379" in text
    assert "Version mismatch" in text and "install 2.9.0" in text
    r = invoke("sweep", "--executor", "ray", "--set", "rounds=1", "--results", tmp_path)
    assert r.exit_code == 2 and "install 2.9.0" in r.output and r.output.count("\n") == 1


def test_a_run_whose_worker_died_runs_again_and_says_so(tmp_path, fake_ray, one_thread, caplog):
    cfgs = _configs()
    ray = fake_ray(crash={run_id(cfgs[0]): 1, run_id(cfgs[1]): 2})
    report = run_sweep(plan_sweep(cfgs, tmp_path), tmp_path, RayExecutor(), quiet=True)
    by_id = {o.run_id: o for o in report.outcomes}
    again = by_id[run_id(cfgs[0])]
    assert again.status == "complete" and again.attempts == 2
    assert "its Ray worker died; running it again (attempt 2)" in caplog.text
    assert "ran out of memory" in caplog.text  # Ray's message, every line of it
    failed = by_id[run_id(cfgs[1])]
    assert failed.status == "failed" and failed.attempts == 2
    assert "The worker died unexpectedly. | Its node ran out of memory." in failed.error
    assert ray.options["max_retries"] == 0  # the sweep retries, so that it can say so
    from rich.console import Console

    from fedbench.sweep import summary_table

    console = Console(width=300, record=True)
    console.print(summary_table(report))
    assert "attempt 2 (its worker died)" in console.export_text()


def test_the_runs_rounds_come_back_while_they_train(tmp_path, fake_ray, one_thread):
    fake_ray()
    seen = []
    cfgs = _configs()
    RayExecutor().run(cfgs, tmp_path, set(), lambda c: None, lambda c, o: None,
                      lambda c, rec: seen.append((run_id(c), rec["round"])))  # fmt: skip
    assert {(run_id(c), 3) for c in cfgs} <= set(seen)


def test_address_goes_with_ray_only():
    with pytest.raises(FedbenchError, match="--executor ray"):
        make_executor("local", address="auto")
