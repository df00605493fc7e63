"""Rollout backends beyond the in-process `Scheduler`: `ray_backend.RayRollouts`
(the same interface, on Ray actors). Import the submodule: Ray is an optional
dependency (`pip install -e ".[ray]"`), so this package imports nothing by itself.

    from posttrain.rollout.backends.ray_backend import RayRollouts, ensure_ray
    from posttrain.rollout.backends.ray_worker import HFEngineFactory
"""

__all__: list[str] = []
