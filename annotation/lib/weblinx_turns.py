"""Which turns of a WebLINX replay a model is asked about and scored on (pure): the turn set.

- ``official`` (the default): the turns the official ``weblinx`` modelling code builds prompts for
  (``processing.prompt.select_turns_and_candidates_for_prompts``), so a score here is over the same turns as a
  paper's. A turn is kept when
  1. it is a chat turn, or a browser turn whose recorded intent is ``click``, ``change``, ``textInput``,
     ``scroll``, ``load`` or ``submit`` (never hover, copy, paste or a tab intent);
  2. it has a screenshot whose status is ``good``; a chat turn without one takes the nearest earlier turn's
     screenshot and status;
  3. it is not a chat turn of another speaker than the navigator;
  4. it is not a ``click``, ``change`` or ``submit`` without an element. The official check compares the
     recorded intent with ``textinput`` in lower case, so a ``textInput`` without an element stays, as there.
- ``all``: every turn but the instructor's chat (the evaluator then scores every prediction it is given).

The evaluator then leaves out the turns whose reference it cannot score (``workers.exports.metrics.weblinx``,
``dropped``), the same for both sets.
"""

TURN_SETS = ("official", "all")
DEFAULT_TURN_SET = "official"
PREDICTED_INTENTS = frozenset({"click", "change", "textInput", "scroll", "load", "submit"})
NEED_ELEMENT = frozenset({"click", "change", "textinput", "submit"})  # compared with the intent as recorded


def intent(turn: dict):
    action = turn.get("action")
    return action.get("intent") if isinstance(action, dict) else None


def element(turn: dict):
    action = turn.get("action")
    arguments = action.get("arguments") if isinstance(action, dict) else None
    return arguments.get("element") if isinstance(arguments, dict) else None


def state(turn: dict) -> dict:
    value = turn.get("state")
    return value if isinstance(value, dict) else {}


def screenshot_status(turns: list, index: int):
    """The status of the turn's screenshot; a chat turn without one: the nearest earlier screenshot's (None when
    there is no screenshot)."""
    own = state(turns[index])
    if own.get("screenshot") is not None or turns[index].get("type") != "chat":
        return own.get("screenshot_status") if own.get("screenshot") is not None else None
    for earlier in reversed(turns[:index]):
        if state(earlier).get("screenshot") is not None:
            return state(earlier).get("screenshot_status", own.get("screenshot_status"))
    return None


def is_official(turns: list, index: int) -> bool:
    """Whether the official modelling code predicts turn ``index`` (the module docstring's rules)."""
    turn = turns[index]
    chat = turn.get("type") == "chat"
    if not chat and intent(turn) not in PREDICTED_INTENTS:
        return False
    if screenshot_status(turns, index) != "good":
        return False
    if chat:
        return turn.get("speaker") == "navigator"
    return not (intent(turn) in NEED_ELEMENT and element(turn) is None)


def is_navigator_turn(turns: list, index: int) -> bool:
    """Every turn but the instructor's chat."""
    turn = turns[index]
    return not (turn.get("type") == "chat" and turn.get("speaker") == "instructor")


RULES = {"official": is_official, "all": is_navigator_turn}


def turn_indices(turns: list, turn_set: str = DEFAULT_TURN_SET) -> list[int]:
    """The positions of the replay's turns (``replay.json``'s ``data``) in ``turn_set``, in order."""
    if turn_set not in RULES:
        raise ValueError(f"unknown turn set {turn_set!r}; expected one of {', '.join(TURN_SETS)}")
    keep = RULES[turn_set]
    return [index for index, turn in enumerate(turns) if isinstance(turn, dict) and keep(turns, index)]
