"""A seeded generator of bAbI-style stories for tasks 1, 2 and 3.

Not the published data set: stories in the same format, vocabulary style
and answer semantics, from a small simulated world. People move between
locations; objects are picked up "there" (where the person is), dropped,
and carried along when their holder moves.

  task 1, single supporting fact:  "where is mary ?"  (her last move)
  task 2, two supporting facts:    "where is the milk ?"  (who has it and
                                   where that person is, or where it was dropped)
  task 3, three supporting facts:  "where was the milk before the kitchen ?"
                                   (the object's location just before it
                                   reached the kitchen; asked only when it
                                   was in the kitchen once)
"""

import dataclasses

import numpy as np

PEOPLE = ("mary", "john", "sandra", "daniel")
LOCATIONS = ("bathroom", "hallway", "kitchen", "office", "bedroom", "garden")
OBJECTS = ("football", "apple", "milk")
MOVES = ("moved to", "went to", "journeyed to", "travelled to", "went back to")
TAKES = ("got", "grabbed", "picked up", "took")
DROPS = ("dropped", "discarded", "put down", "left")
TASKS = (1, 2, 3)
QUESTIONS_PER_STORY = 5
MAX_STATEMENTS = {1: 10, 2: 30, 3: 40}


@dataclasses.dataclass
class _World:
    """Where everyone and everything is, and which statement said so."""

    place: dict = dataclasses.field(default_factory=dict)  # person -> (location, statement)
    holder: dict = dataclasses.field(default_factory=dict)  # object -> (person, statement)
    # object -> [(location, statement)], consecutive locations differ
    history: dict = dataclasses.field(default_factory=dict)

    def locate(self, obj: str, location: str, statement: int) -> None:
        trail = self.history.setdefault(obj, [])
        if not trail or trail[-1][0] != location:
            trail.append((location, statement))


def _choice(rng: np.random.Generator, items):
    return items[int(rng.integers(len(items)))]


def _statement(world: _World, task: int, index: int, rng: np.random.Generator) -> str:
    """One random event, applied to the world; its sentence."""
    located = [p for p in PEOPLE if p in world.place]
    takeable = [
        (p, o)
        for p in located
        for o in OBJECTS
        if o not in world.holder
        and (o not in world.history or world.history[o][-1][0] == world.place[p][0])
    ]
    held = [(p, o) for o, (p, _) in world.holder.items()]
    kind = "move"
    if task > 1:
        roll = rng.random()
        if roll < 0.25 and takeable:
            kind = "take"
        elif roll < 0.35 and held:
            kind = "drop"
    if kind == "take":
        person, obj = _choice(rng, takeable)
        world.holder[obj] = (person, index)
        world.locate(obj, world.place[person][0], index)
        return f"{person.capitalize()} {_choice(rng, TAKES)} the {obj} there."
    if kind == "drop":
        person, obj = _choice(rng, held)
        del world.holder[obj]
        return f"{person.capitalize()} {_choice(rng, DROPS)} the {obj}."
    # Task 3 asks where an object was: its holders move more often.
    holders = sorted({p for p, _ in held})
    person = _choice(rng, holders if task == 3 and holders and rng.random() < 0.5 else PEOPLE)
    here = world.place.get(person, (None, None))[0]
    location = _choice(rng, [loc for loc in LOCATIONS if loc != here])
    world.place[person] = (location, index)
    for obj, (holder, _) in world.holder.items():
        if holder == person:
            world.locate(obj, location, index)
    return f"{person.capitalize()} {_choice(rng, MOVES)} the {location}."


def _question(world: _World, task: int, rng: np.random.Generator):
    """(question, answer, supporting statements) answerable now, or None."""
    if task == 1:
        if not world.place:
            return None
        person = _choice(rng, sorted(world.place))
        location, said = world.place[person]
        return f"Where is {person.capitalize()}?", location, [said]
    if task == 2:
        known = sorted(world.history)
        if not known:
            return None
        obj = _choice(rng, known)
        location, said = world.history[obj][-1]
        supporting = [said]
        if obj in world.holder:
            person, taken = world.holder[obj]
            supporting = sorted({taken, world.place[person][1]})
        return f"Where is the {obj}?", location, supporting
    candidates = []
    for obj, trail in sorted(world.history.items()):
        names = [loc for loc, _ in trail]
        for i in range(1, len(trail)):
            if names.count(names[i]) == 1:
                candidates.append((obj, i))
    if not candidates:
        return None
    obj, i = _choice(rng, candidates)
    trail = world.history[obj]
    question = f"Where was the {obj} before the {trail[i][0]}?"
    return question, trail[i - 1][0], sorted({trail[i - 1][1], trail[i][1]})


def story(task: int, rng: np.random.Generator) -> tuple[list[str], dict]:
    """One story: statements and {statements before it: (question, answer, supporting)}."""
    if task not in TASKS:
        raise ValueError(f"generated bAbI tasks are {TASKS}, got {task}")
    world = _World()
    statements: list[str] = []
    questions: dict = {}
    last_asked = 0
    while len(questions) < QUESTIONS_PER_STORY and len(statements) < MAX_STATEMENTS[task]:
        statements.append(_statement(world, task, len(statements), rng))
        if len(statements) - last_asked >= 2 and (task == 1 or rng.random() < 0.5):
            asked = _question(world, task, rng)
            if asked is not None:
                questions[len(statements)] = asked
                last_asked = len(statements)
    return statements, questions
