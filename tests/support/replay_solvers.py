"""A scripted solver for replayed tasks (``manage.py replay_agent --solver python:tests.support.replay_solvers:…``):
the recorded step everywhere but on TYPE steps, where it types one word more than was recorded."""


class TypesOneWordMore:
    name, uses_gold = "types-one-word-more", True

    def act(self, observation: dict) -> dict:
        reference = observation["reference"]
        ids = {str(candidate["backend_node_id"]) for candidate in observation["candidates"]}
        if reference["element"] not in ids or len(observation["previous_actions"]) != observation["action_index"]:
            raise AssertionError(f"an observation without the recorded element or history: {observation}")
        if "<body" not in observation["html"] or not observation["task"]:
            raise AssertionError("an observation without the live page or the task")
        if reference["op"] == "TYPE":
            return reference | {"value": reference["value"] + " Lee"}
        return reference
