"""Requests on bfcl-eval's VehicleControlAPI and MathAPI, sampled from the live instance (doors, engine, fuel,
brakes). City pairs for distances are the ones the simulator knows (asked of a copy). Functions whose outputs are
random draws or depend on process-wide settings (`get_current_speed`, the outside temperature, MathAPI's
`square_root` / `logarithm`, which set global precision) are never asked for. Standard library only."""

from __future__ import annotations

import copy

from agentic_verl.data.bfcl_multi_turn import vocab
from agentic_verl.data.bfcl_multi_turn.core import Action, Call, Context, Missing, join_words, quoted
from agentic_verl.data.bfcl_multi_turn.states import DOORS

VEHICLE = "VehicleControlAPI"
ZIP_CITIES = ["Rivermist", "Stonebrook", "Maplecrest", "Silverpine", "Shadowridge", "Sunset Valley", "Oakendale",
              "Willowbend", "Crescent Hollow", "Autumnville", "San Francisco"]  # fmt: skip
STATUS_WORDS = {"fuel": "fuel", "battery": "battery", "doors": "door", "climate": "climate", "headlights": "headlight",
                "parkingBrake": "parking brake", "brakePedal": "brake pedal", "engine": "engine"}  # fmt: skip


def _door_words(doors: list[str]) -> str:
    return join_words([door.replace("_", " ") for door in doors])


def start_engine(ctx: Context) -> Action | None:
    car = ctx.instances[VEHICLE]
    if car.engine_state == "running":
        return None
    unlocked = [door for door in DOORS if car.doorStatus[door] == "unlocked"]
    calls, steps = [], []
    if unlocked:
        calls.append(Call("lockDoors", {"unlock": False, "door": unlocked}))
        steps.append(f"lock the {_door_words(unlocked)} door{'s' if len(unlocked) > 1 else ''}")
    if car.brakePedalStatus != "pressed" or car._brakePedalForce != 1000.0:
        calls.append(Call("pressBrakePedal", {"pedalPosition": 1.0}))
        steps.append("press the brake pedal all the way down")
    calls.append(Call("startEngine", {"ignitionMode": "START"}))
    steps.append("start the engine")
    return Action(join_words(steps), calls)


def lock_doors(ctx: Context) -> Action | None:
    car = ctx.instances[VEHICLE]
    unlock = ctx.rng.random() < 0.4
    doors = [door for door in DOORS if car.doorStatus[door] == ("locked" if unlock else "unlocked")]
    if not doors:
        return None
    doors = sorted(ctx.rng.sample(doors, ctx.rng.randint(1, len(doors))), key=DOORS.index)
    verb = "unlock" if unlock else "lock"
    return Action(f"{verb} the {_door_words(doors)} door{'s' if len(doors) > 1 else ''}",
                  [Call("lockDoors", {"unlock": unlock, "door": doors})])


def fill_tank(ctx: Context) -> Action | None:
    car = ctx.instances[VEHICLE]
    room = int(50 - car.fuelLevel)
    if room < 2:
        return None
    if ctx.rng.random() < 0.3:
        liters = ctx.rng.randint(1, max(1, int(room * 3.7) // 5)) * 5
        gallons = liters * 0.264172
        return Action(f"add {int(liters)} liters of fuel to the tank",
                      [Call("liter_to_gallon", {"liter": liters}),
                       Call("fillFuelTank", {"fuelAmount": gallons}, new_step=True)])
    amount = ctx.rng.randint(1, room)
    return Action(f"put {int(amount)} gallons of fuel in the tank", [Call("fillFuelTank", {"fuelAmount": amount})],
                  Missing("put some fuel in the tank", "How many gallons should I add?", f"Add {int(amount)} gallons."))


def climate(ctx: Context) -> Action | None:
    if ctx.rng.random() < 0.3:
        temperature = ctx.rng.randint(60, 80)
        return Action(f"set the air conditioning to {int(temperature)} degrees Fahrenheit",
                      [Call("adjustClimateControl", {"temperature": temperature, "unit": "fahrenheit"})])
    temperature, fan = ctx.rng.randint(16, 28), ctx.rng.randrange(10, 101, 10)
    mode = ctx.rng.choice(["auto", "cool", "heat", "defrost"])
    return Action(f"set the air conditioning to {int(temperature)} degrees Celsius in {mode} mode with fan speed {fan}",
                  [Call("adjustClimateControl", {"temperature": temperature, "unit": "celsius", "fanSpeed": fan,
                                                 "mode": mode})],
                  Missing(f"switch the air conditioning to {mode} mode with fan speed {fan}",
                          "Which temperature should I set?", f"{int(temperature)} degrees Celsius, please."))


def headlights(ctx: Context) -> Action | None:
    mode = "off" if ctx.instances[VEHICLE].headLightStatus == "on" else "on"
    return Action(f"turn the headlights {mode}", [Call("setHeadlights", {"mode": mode})])


def car_status(ctx: Context) -> Action | None:
    option = ctx.rng.choice(sorted(STATUS_WORDS))
    return Action(f"show me the {STATUS_WORDS[option]} status", [Call("displayCarStatus", {"option": option})])


def parking_brake(ctx: Context) -> Action | None:
    mode = "release" if ctx.instances[VEHICLE].parkingBrakeStatus == "engaged" else "engage"
    return Action(f"{mode} the parking brake", [Call("activateParkingBrake", {"mode": mode})])


def brake_pedal(ctx: Context) -> Action | None:
    car = ctx.instances[VEHICLE]
    if car.brakePedalStatus == "pressed":
        return Action("release the brake pedal", [Call("releaseBrakePedal", {})])
    position = ctx.rng.choice([0.3, 0.5, 0.7, 1.0])
    return Action(f"press the brake pedal to {int(position * 100)}% of its travel, that is position {position}",
                  [Call("pressBrakePedal", {"pedalPosition": position})])


def cruise(ctx: Context) -> Action | None:
    if ctx.instances[VEHICLE].engine_state != "running":
        return None
    speed, distance = ctx.rng.randrange(30, 121, 5), ctx.rng.randrange(20, 101, 10)
    return Action(f"turn on cruise control at {int(speed)} mph, keeping {int(distance)} meters to the car ahead",
                  [Call("setCruiseControl", {"speed": speed, "activate": True, "distanceToNextVehicle": distance})],
                  Missing(f"turn on cruise control at {int(speed)} mph", "How far from the car ahead should I stay?",
                          f"Keep {int(distance)} meters."))


def _distance_pairs(ctx: Context) -> list[tuple[str, str]]:
    if "vehicle_pairs" not in ctx.facts:
        probe = copy.deepcopy(ctx.instances[VEHICLE])
        probe.long_context = False
        zips = {city: probe.get_zipcode_based_on_city(city)["zipcode"] for city in ZIP_CITIES}
        ctx.facts["vehicle_pairs"] = [(a, b) for a in ZIP_CITIES for b in ZIP_CITIES
                                      if a != b and "error" not in probe.estimate_distance(zips[a], zips[b])]
    return ctx.facts["vehicle_pairs"]


def distance(ctx: Context) -> Action | None:
    car = ctx.instances[VEHICLE]
    first, second = ctx.rng.choice(_distance_pairs(ctx))
    zips = [car.get_zipcode_based_on_city(city)["zipcode"] for city in (first, second)]
    return Action(f"estimate the distance between {first} and {second}",
                  [Call("get_zipcode_based_on_city", {"city": first}),
                   Call("get_zipcode_based_on_city", {"city": second}),
                   Call("estimate_distance", {"cityA": zips[0], "cityB": zips[1]}, new_step=True)])


def feasibility(ctx: Context) -> Action | None:
    miles = ctx.rng.randint(5, 120) * 10
    return Action(f"tell me whether I can drive {int(miles)} miles on the fuel I have",
                  [Call("estimate_drive_feasibility_by_mileage", {"distance": miles})])


def convert_volume(ctx: Context) -> Action | None:
    amount = ctx.rng.randint(2, 60)
    if ctx.rng.random() < 0.5:
        return Action(f"convert {int(amount)} gallons to liters", [Call("gallon_to_liter", {"gallon": amount})])
    return Action(f"convert {int(amount)} liters to gallons", [Call("liter_to_gallon", {"liter": amount})])


def navigate(ctx: Context) -> Action | None:
    place = f"{ctx.rng.randint(10, 999)} {ctx.rng.choice(vocab.ADJECTIVES).capitalize()} Street, " \
            f"{ctx.rng.choice(ZIP_CITIES)}, {ctx.rng.choice(['CA', 'OR', 'NV', 'WA'])}"
    return Action(f"navigate to {quoted(place)}", [Call("set_navigation", {"destination": place})],
                  Missing("start navigation to my destination", "What is the destination address?",
                          f"The address is {quoted(place)}."))


def tires(ctx: Context) -> Action | None:
    if ctx.rng.random() < 0.5:
        return Action("check the tire pressure", [Call("check_tire_pressure", {})])
    return Action("check the tire pressure and find the nearest tire shop",
                  [Call("check_tire_pressure", {}), Call("find_nearest_tire_shop", {})])


def log(ctx: Context) -> Action | None:
    lines = [vocab.sentence(ctx.rng) for _ in range(ctx.rng.randint(1, 2))]
    return Action(f"show the log message{'s' if len(lines) > 1 else ''} {join_words([quoted(x) for x in lines])}",
                  [Call("display_log", {"messages": lines})])


# -- MathAPI (stateless) ----------------------------------------------------------------------------
def _number(ctx: Context) -> float:
    return ctx.rng.randint(-50, 500) if ctx.rng.random() < 0.6 else round(ctx.rng.uniform(0.5, 300), 2)


def _show(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def arithmetic(ctx: Context) -> Action | None:
    a, b = _number(ctx), _number(ctx)
    name, words = ctx.rng.choice([("add", "add {a} and {b}"), ("subtract", "subtract {b} from {a}"),
                                  ("multiply", "multiply {a} by {b}"), ("divide", "divide {a} by {b}")])
    if name == "divide" and b == 0:
        return None
    return Action(words.format(a=_show(a), b=_show(b)), [Call(name, {"a": a, "b": b})])


def statistics(ctx: Context) -> Action | None:
    numbers = [_number(ctx) for _ in range(ctx.rng.randint(3, 6))]
    name, words = ctx.rng.choice([("mean", "the average"), ("standard_deviation", "the standard deviation"),
                                  ("max_value", "the largest"), ("min_value", "the smallest"),
                                  ("sum_values", "the sum")])
    return Action(f"compute {words} of {join_words([_show(n) for n in numbers])}", [Call(name, {"numbers": numbers})])


def other_math(ctx: Context) -> Action | None:
    x = _number(ctx)
    choice = ctx.rng.randrange(4)
    if choice == 0:
        exponent = ctx.rng.randint(2, 4)
        return Action(f"raise {_show(x)} to the power {_show(exponent)}",
                      [Call("power", {"base": x, "exponent": exponent})])
    if choice == 1:
        places = ctx.rng.randint(0, 2)
        value = round(ctx.rng.uniform(1, 1000), 4)
        return Action(f"round {value} to {places} decimal places",
                      [Call("round_number", {"number": value, "decimal_places": places})])
    if choice == 2:
        whole = ctx.rng.randint(50, 1000)
        part = ctx.rng.randint(1, whole)
        return Action(f"tell me what percentage {_show(part)} is of {_show(whole)}",
                      [Call("percentage", {"part": part, "whole": whole})])
    return Action(f"give me the absolute value of {_show(x)}", [Call("absolute_value", {"number": x})])


def unit_conversion(ctx: Context) -> Action | None:
    value = ctx.rng.randint(1, 500)
    if ctx.rng.random() < 0.5:
        unit_in, unit_out = ctx.rng.sample(["km", "m", "cm", "mm"], 2)
        return Action(f"convert {_show(value)} {unit_in} to {unit_out}",
                      [Call("si_unit_conversion", {"value": value, "unit_in": unit_in, "unit_out": unit_out})])
    unit_in, unit_out = ctx.rng.choice([("miles", "km"), ("km", "miles"), ("kg", "lb"), ("lb", "kg"), ("ft", "m"),
                                        ("m", "ft"), ("celsius", "fahrenheit")])
    return Action(f"convert {_show(value)} {unit_in} to {unit_out}",
                  [Call("imperial_si_conversion", {"value": value, "unit_in": unit_in, "unit_out": unit_out})])


VEHICLE_SAMPLERS = [(2, start_engine), (1.5, lock_doors), (1, fill_tank), (1, climate), (0.7, headlights),
                    (0.8, car_status), (0.7, parking_brake), (0.5, brake_pedal), (1, cruise), (0.8, distance),
                    (0.5, feasibility), (0.4, convert_volume), (0.8, navigate), (0.6, tires), (0.3, log)]  # fmt: skip
MATH_SAMPLERS = [(2, arithmetic), (1, statistics), (1, other_math), (0.6, unit_conversion)]
