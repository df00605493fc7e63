"""Rollouts: the episode loop that turns tasks into verified, token-exact trajectories."""

from posttrain.rollout.episode import prompt_ids, render, replay_references, run_episodes

__all__ = ["prompt_ids", "render", "replay_references", "run_episodes"]
