"""Random initial states for bfcl-eval's simulator classes, in the `initial_config` form each class's
`_load_scenario` reads (its keys and value shapes; read there). `big=True` (long_context tasks) makes more files,
messages, tweets, tickets, orders; bfcl-eval then pads the state further itself when the entry is long-context.
Standard library only.

>>> import random
>>> state = initial_state("TicketAPI", random.Random(0))
>>> sorted(state), state["ticket_counter"] == len(state["ticket_queue"]) + 1
(['current_user', 'ticket_counter', 'ticket_queue'], True)
"""

from __future__ import annotations

import random

from agentic_verl.data.bfcl_multi_turn import vocab

STATELESS = ("MathAPI",)  # bfcl-eval loads no scenario for these (STATELESS_CLASSES)
DOORS = ("driver", "passenger", "rear_left", "rear_right")
# TradingBot.get_symbol_by_name knows these companies; states use a subset so that names resolve.
COMPANY_SYMBOLS = {"Apple": "AAPL", "Google": "GOOG", "Tesla": "TSLA", "Microsoft": "MSFT", "Nvidia": "NVDA",
                   "Zeta Corp": "ZETA", "Alpha Tech": "ALPH", "Omega Industries": "OMEG", "Quasar Ltd.": "QUAS",
                   "Neptune Systems": "NEPT", "Synex Solutions": "SYNX"}  # fmt: skip


def _file(rng: random.Random, lines: int) -> dict:
    return {"type": "file", "content": "\n".join(vocab.sentence(rng) for _ in range(lines))}


def _directory(rng: random.Random, depth: int, big: bool) -> dict:
    contents: dict = {}
    for _ in range(rng.randint(4, 8) if big else rng.randint(1, 3)):
        contents[vocab.file_name(rng, contents)] = _file(rng, rng.randint(2, 6))
    if rng.random() < 0.25:
        contents[f".{rng.choice(vocab.FILE_KINDS)}_{rng.randint(1, 9)}"] = _file(rng, 1)
    if depth > 0 and rng.random() < 0.6:
        for _ in range(rng.randint(1, 2)):
            contents[vocab.folder_name(rng, contents)] = _directory(rng, depth - 1, big)
    if rng.random() < 0.15:
        contents[vocab.folder_name(rng, contents)] = {"type": "directory", "contents": {}}
    return {"type": "directory", "contents": contents}


def file_system(rng: random.Random, big: bool = False) -> dict:
    """{"root": {user: directory}}: the user's folder with 2-3 folders (4-6 when big), files, a hidden file now
    and then, at most three levels."""
    top: dict = {}
    for _ in range(rng.randint(4, 6) if big else rng.randint(2, 3)):
        top[vocab.folder_name(rng, top)] = _directory(rng, 1, big)
    for _ in range(rng.randint(0, 2)):
        top[vocab.file_name(rng, top)] = _file(rng, rng.randint(1, 4))
    return {"root": {rng.choice(vocab.FIRST_NAMES).lower(): {"type": "directory", "contents": top}}}


def message_api(rng: random.Random, big: bool = False) -> dict:
    names = rng.sample(vocab.FIRST_NAMES, rng.randint(4, 7))
    user_map = {name: f"USR{i:03d}" for i, name in enumerate(names, start=1)}
    ids = list(user_map.values())
    size = rng.randint(15, 30) if big else rng.randint(1, 4)
    inbox = [{rng.choice(ids[1:]): vocab.sentence(rng)} for _ in range(size)]
    return {"random_seed": rng.randint(1, 10**6), "user_count": len(user_map), "user_map": user_map, "inbox": inbox,
            "message_count": len(inbox), "current_user": ids[0] if rng.random() < 0.5 else None}


def twitter_api(rng: random.Random, big: bool = False) -> dict:
    me = vocab.handle(rng)
    others = [vocab.handle(rng, (me,)) for _ in range(4)]
    tweets = {}
    for i in range(rng.randint(20, 40) if big else rng.randint(2, 5)):
        author = me if rng.random() < 0.4 else rng.choice(others)
        tags = [f"#{rng.choice(vocab.TOPICS)}" for _ in range(rng.randint(0, 2))]
        tweets[str(i)] = {"id": i, "username": author, "content": vocab.sentence(rng), "tags": tags, "mentions": []}
    return {"username": me, "password": vocab.password(rng), "authenticated": rng.random() < 0.3, "tweets": tweets,
            "comments": {}, "retweets": {}, "following_list": rng.sample(others, rng.randint(1, 3)),
            "tweet_counter": len(tweets)}


def ticket_api(rng: random.Random, big: bool = False) -> dict:
    me, colleague = rng.sample(vocab.HANDLE_PARTS, 2)
    queue = []
    for i in range(1, (rng.randint(15, 30) if big else rng.randint(1, 4)) + 1):
        queue.append({"id": i, "title": f"{rng.choice(vocab.TOPICS).capitalize()} {rng.choice(vocab.NOUNS)} issue",
                      "description": vocab.sentence(rng),
                      "status": rng.choice(["Open", "Open", "In Progress", "Closed"]),
                      "priority": rng.randint(1, 5), "created_by": me if rng.random() < 0.7 else colleague})
    return {"ticket_queue": queue, "ticket_counter": len(queue) + 1, "current_user": me if rng.random() < 0.4 else None}


def trading_bot(rng: random.Random, big: bool = False) -> dict:
    companies = rng.sample(sorted(COMPANY_SYMBOLS), len(COMPANY_SYMBOLS) if big else rng.randint(4, 7))
    stocks = {}
    for company in companies:
        price = round(rng.uniform(15, 900), 2)
        stocks[COMPANY_SYMBOLS[company]] = {
            "price": price, "percent_change": round(rng.uniform(-3, 3), 2), "volume": round(rng.uniform(0.2, 5), 3),
            "MA(5)": round(price * rng.uniform(0.97, 1.03), 2), "MA(20)": round(price * rng.uniform(0.94, 1.06), 2)}
    symbols = list(stocks)
    first_id = rng.randint(20000, 80000)
    orders = {}
    for order_id in range(first_id, first_id + (rng.randint(10, 20) if big else rng.randint(1, 3))):
        symbol = rng.choice(symbols)
        orders[str(order_id)] = {"id": order_id, "order_type": rng.choice(["Buy", "Sell"]), "symbol": symbol,
                                 "price": stocks[symbol]["price"], "amount": rng.randint(1, 40),
                                 "status": rng.choice(["Completed", "Pending", "Open"])}
    return {"orders": orders,
            "account_info": {"account_id": rng.randint(10000, 99999), "balance": float(rng.randint(2000, 60000)),
                             "binding_card": int(vocab.digits(rng, 16))},
            "authenticated": rng.random() < 0.4, "market_status": rng.choice(["Open", "Closed"]),
            "order_counter": first_id + len(orders), "stocks": stocks,
            "watch_list": rng.sample(symbols, rng.randint(1, 3)), "transaction_history": [],
            "random_seed": rng.randint(1, 10**6)}


def travel_api(rng: random.Random, big: bool = False) -> dict:
    first, last = rng.choice(vocab.FIRST_NAMES), rng.choice(vocab.LAST_NAMES)
    cards = {}
    for _ in range(rng.randint(3, 5) if big else rng.randint(1, 3)):
        cards[vocab.digits(rng, 12)] = {
            "card_number": vocab.digits(rng, 16),
            "expiration_date": f"{rng.randint(1, 12):02d}/{rng.randint(2027, 2033)}",
            "cardholder_name": f"{first} {last}", "card_verification_number": rng.randint(100, 999),
            "balance": float(rng.randint(800, 20000))}
    state = {"random_seed": rng.randint(1, 10**6), "credit_card_list": cards, "booking_record": {},
             "user_first_name": first, "user_last_name": last,
             "budget_limit": float(rng.randint(1, 5) * 100) if rng.random() < 0.2 else None}
    if rng.random() < 0.6:  # already signed in: the user gives the token when a request needs it
        state.update(access_token=f"{rng.choice(vocab.HANDLE_PARTS)}{vocab.digits(rng, 6)}", token_type="Bearer",
                     token_expires_in=2, token_scope="read_write")
    return state


def vehicle_control(rng: random.Random, big: bool = False) -> dict:
    door_status = {door: rng.choice(["locked", "unlocked"]) for door in DOORS}
    return {"random_seed": rng.randint(1, 10**6), "fuelLevel": float(rng.randint(2, 40)),
            "batteryVoltage": round(rng.uniform(11.5, 13.5), 1), "engineState": "stopped", "doorStatus": door_status,
            "acTemperature": float(rng.randint(16, 28)), "fanSpeed": rng.randrange(0, 101, 10),
            "acMode": rng.choice(["auto", "cool", "heat"]), "humidityLevel": float(rng.randint(30, 70)),
            "headLightStatus": rng.choice(["on", "off"]), "parkingBrakeStatus": "released", "parkingBrakeForce": 0.0,
            "slopeAngle": 0.0, "brakePedalStatus": "released", "brakePedalForce": 0.0,
            "distanceToNextVehicle": float(rng.randint(20, 80)), "cruiseStatus": "inactive", "destination": "None",
            "frontLeftTirePressure": float(rng.randint(28, 36)), "frontRightTirePressure": float(rng.randint(28, 36)),
            "rearLeftTirePressure": float(rng.randint(27, 35)), "rearRightTirePressure": float(rng.randint(27, 35))}


BUILDERS = {"GorillaFileSystem": file_system, "MessageAPI": message_api, "TwitterAPI": twitter_api,
            "TicketAPI": ticket_api, "TradingBot": trading_bot, "TravelAPI": travel_api,
            "VehicleControlAPI": vehicle_control}  # fmt: skip


def initial_state(class_name: str, rng: random.Random, big: bool = False) -> dict:
    if class_name not in BUILDERS:
        raise ValueError(f"no state builder for {class_name!r}; known: {', '.join(sorted(BUILDERS))}")
    return BUILDERS[class_name](rng, big)
