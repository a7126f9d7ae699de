"""Requests on bfcl-eval's TradingBot and TravelAPI, sampled from the live instances (login, market status,
balances, orders, cards, bookings, the access token). Flight routes and airports are the simulator's own: a route
is offered only where `get_flight_cost` prices it. Standard library only."""

from __future__ import annotations

import copy

from agentic_verl.data.bfcl_multi_turn import core, vocab
from agentic_verl.data.bfcl_multi_turn.core import Action, Call, Context, Missing, asks, join_words, money, quoted
from agentic_verl.data.bfcl_multi_turn.states import COMPANY_SYMBOLS

TRADING, TRAVEL = "TradingBot", "TravelAPI"
NAME_OF_SYMBOL = {symbol: name for name, symbol in COMPANY_SYMBOLS.items()}
# what later requests refer to: the ids the calls gave
_remember_order = core.remember_id("orders_placed", "order_id")
_remember_booking = core.remember_id("bookings_made", "booking_id")


# -- TradingBot -------------------------------------------------------------------------------------
def _trading_logged_in(ctx: Context) -> bool:
    return ctx.instances[TRADING].authenticated


def trading_login(ctx: Context) -> Action | None:
    if ctx.instances[TRADING].authenticated:
        return None
    user, secret = vocab.handle(ctx.rng), vocab.password(ctx.rng)
    return Action(f"log in to my trading account with username {quoted(user)} and password {quoted(secret)}",
                  [Call("trading_login", {"username": user, "password": secret})])


def symbol_by_name(ctx: Context) -> Action | None:
    bot = ctx.instances[TRADING]
    names = sorted(NAME_OF_SYMBOL[s] for s in bot.stocks if s in NAME_OF_SYMBOL)
    if not names:
        return None
    name = ctx.rng.choice(names)
    return Action(f"look up the stock symbol of {name}", [Call("get_symbol_by_name", {"name": name})])


def stock_info(ctx: Context) -> Action | None:
    bot = ctx.instances[TRADING]
    symbol = ctx.rng.choice(sorted(bot.stocks))
    if symbol in NAME_OF_SYMBOL and ctx.rng.random() < 0.5:
        name = NAME_OF_SYMBOL[symbol]
        return Action(f"get the latest stock information for {name}",
                      [Call("get_symbol_by_name", {"name": name}),
                       Call("get_stock_info", {"symbol": symbol}, new_step=True)])
    return Action(f"get the latest stock information for {symbol}", [Call("get_stock_info", {"symbol": symbol})],
                  Missing("get the latest information on one of the stocks", "Which stock do you mean?",
                          f"I mean {symbol}."))


def place_order(ctx: Context) -> Action | None:
    bot = ctx.instances[TRADING]
    if not bot.authenticated:
        return None
    symbol = ctx.rng.choice(sorted(bot.stocks))
    price, amount = bot.stocks[symbol]["price"], ctx.rng.randint(1, 30)
    side = ctx.rng.choice(["Buy", "Sell"])
    verb = "buy" if side == "Buy" else "sell"
    shares = f"{amount} share{'s' if amount > 1 else ''}"
    if side == "Buy" and price * amount > bot.account_info["balance"]:
        return None
    args = {"order_type": side, "symbol": symbol, "price": price, "amount": amount}
    if ctx.rng.random() < 0.4:  # the price comes from the stock's information
        return Action(f"{verb} {shares} of {symbol} at its current price",
                      [Call("get_stock_info", {"symbol": symbol}), Call("place_order", args, new_step=True)],
                      remember=_remember_order)
    return Action(f"{verb} {shares} of {symbol} at {money(price)} each", [Call("place_order", args)],
                  Missing(f"{verb} some shares of {symbol} at {money(price)} each",
                          f"How many shares should I {verb}?", f"{verb.capitalize()} {shares}."),
                  remember=_remember_order)


def _order_reference(ctx: Context, usable) -> tuple[int, str, bool] | None:
    bot = ctx.instances[TRADING]
    placed = [i for i in ctx.facts.get("orders_placed") or [] if usable(bot.orders[i])]
    if placed and ctx.rng.random() < 0.6:
        return placed[-1], "the order you just placed", True
    ids = sorted(i for i, order in bot.orders.items() if usable(order))
    if not ids:
        return None
    order_id = ctx.rng.choice(ids)
    return order_id, f"order {order_id}", False


def cancel_order(ctx: Context) -> Action | None:
    ref = _order_reference(ctx, lambda order: order["status"] in ("Open", "Pending"))
    if ref is None:
        return None
    return Action(f"cancel {ref[1]}", [Call("cancel_order", {"order_id": ref[0]}, new_step=ref[2])])


def order_details(ctx: Context) -> Action | None:
    ref = _order_reference(ctx, lambda order: True)
    if ref is None:
        return None
    return Action(f"show me the details of {ref[1]}",
                  [Call("get_order_details", {"order_id": ref[0]}, new_step=ref[2])])


account_info = asks("show my trading account information", "get_account_info", when=_trading_logged_in)


def fund(ctx: Context) -> Action | None:
    if not ctx.instances[TRADING].authenticated:
        return None
    amount = ctx.rng.randint(1, 40) * 50
    return Action(f"deposit {money(amount)} into my trading account", [Call("fund_account", {"amount": amount})],
                  Missing("add some money to my trading account", "How much should I deposit?",
                          f"Deposit {money(amount)}."))


def withdraw(ctx: Context) -> Action | None:
    bot = ctx.instances[TRADING]
    amount = ctx.rng.randint(1, 20) * 25
    if not bot.authenticated or bot.market_status != "Open" or amount > bot.account_info["balance"]:
        return None
    return Action(f"withdraw {money(amount)} from my trading account", [Call("withdraw_funds", {"amount": amount})])


def watch(ctx: Context) -> Action | None:
    bot = ctx.instances[TRADING]
    candidates = sorted(set(bot.stocks) - set(bot.watch_list))
    if not candidates:
        return None
    symbol = ctx.rng.choice(candidates)
    return Action(f"add {symbol} to my watchlist", [Call("add_to_watchlist", {"stock": symbol})],
                  Missing("add a stock to my watchlist", "Which stock should I add?", f"Add {symbol}."))


def unwatch(ctx: Context) -> Action | None:
    if (symbol := core.choose(ctx, ctx.instances[TRADING].watch_list, when=_trading_logged_in)) is None:
        return None
    return Action(f"remove {symbol} from my watchlist", [Call("remove_stock_from_watchlist", {"symbol": symbol})])


watchlist = asks("show me my watchlist", "get_watchlist", when=_trading_logged_in)


order_history = asks("list the IDs of all my orders", "get_order_history", when=_trading_logged_in)


def sector(ctx: Context) -> Action | None:
    name = ctx.rng.choice(["Technology", "Automobile"])
    return Action(f"list the stocks of the {name} sector", [Call("get_available_stocks", {"sector": name})])


def filter_by_price(ctx: Context) -> Action | None:
    bot = ctx.instances[TRADING]
    symbols = ctx.rng.sample(sorted(bot.stocks), min(len(bot.stocks), ctx.rng.randint(2, 4)))
    low = ctx.rng.randint(0, 8) * 50
    high = low + ctx.rng.randint(2, 10) * 50
    return Action(f"tell me which of {join_words(symbols)} trade between {money(low)} and {money(high)}",
                  [Call("filter_stocks_by_price", {"stocks": symbols, "min_price": low, "max_price": high})])


def price_alert(ctx: Context) -> Action | None:
    bot = ctx.instances[TRADING]
    symbols = ctx.rng.sample(sorted(bot.stocks), min(len(bot.stocks), ctx.rng.randint(1, 3)))
    threshold = ctx.rng.choice([0.5, 1.0, 1.5, 2.0])
    return Action(f"check whether {join_words(symbols, 'or')} moved by at least {threshold}%",
                  [Call("notify_price_change", {"stocks": symbols, "threshold": threshold})])


transactions = asks("show me my transaction history", "get_transaction_history", when=_trading_logged_in)


trading_logout = asks("log me out of the trading platform", "trading_logout", when=_trading_logged_in)


# -- TravelAPI --------------------------------------------------------------------------------------
CURRENCIES = ["RMB", "EUR", "JPY", "GBP", "CAD", "AUD", "INR", "RUB", "BRL", "MXN"]
CITIES = ["Rivermist", "Stonebrook", "Maplecrest", "Silverpine", "Shadowridge", "London", "Paris", "Sunset Valley",
          "Oakendale", "Willowbend", "Crescent Hollow", "Autumnville", "Pinehaven", "Greenfield", "San Francisco",
          "Los Angeles", "New York", "Chicago", "Boston", "Beijing", "Hong Kong", "Rome", "Tokyo"]  # fmt: skip


def _token(ctx: Context) -> tuple[str | None, str, bool]:
    """(the access token, words the request adds for it, whether it came from an output): the user names a token
    the conversation has not given yet; a token that `authenticate_travel` returned is the model's to read."""
    api = ctx.instances[TRAVEL]
    if api.access_token is None or api.token_expires_in == 0:
        return None, "", False
    if ctx.facts.get("travel_token_from_output"):
        return api.access_token, "", True
    if ctx.facts.get("travel_token_known"):
        return api.access_token, "", False
    return api.access_token, f", using my access token {quoted(api.access_token)}", False


def _token_known(ctx: Context, results: list) -> None:
    ctx.facts["travel_token_known"] = True


def _token_returned(ctx: Context, results: list) -> None:
    ctx.facts["travel_token_from_output"] = True


def _cards(ctx: Context) -> list[str]:
    """The cards of the task's own state and the ones registered since. Never the cards bfcl-eval adds to a
    long-context state: those are module-level dicts shared by every instance, so charging one would change other
    instances (the gold run's among them)."""
    return list(ctx.facts.get("travel_cards") or [])


def _remember_card(ctx: Context, results: list) -> None:
    ctx.fact_list("travel_cards").append(results[-1]["card_id"])
    _token_known(ctx, results)


def _article(travel_class: str) -> str:
    """'an economy-class', 'a first-class'."""
    return f"{'an' if travel_class[0] in 'aeiou' else 'a'} {travel_class}-class"


def _date(ctx: Context) -> str:
    return f"{ctx.rng.randint(2026, 2027)}-{ctx.rng.randint(1, 12):02d}-{ctx.rng.randint(1, 28):02d}"


def _routes(ctx: Context) -> list[tuple[str, str]]:
    """The routes the simulator prices (asked of a copy, which keeps the live instance's random state as it is)."""
    if "travel_routes" not in ctx.facts:
        probe = copy.deepcopy(ctx.instances[TRAVEL])
        probe.long_context = False
        airports = sorted(probe.list_all_airports())
        routes = []
        for origin in airports:
            for target in airports:
                try:
                    probe.get_flight_cost(origin, target, "2026-01-01", "economy")
                except ValueError:
                    continue
                routes.append((origin, target))
        ctx.facts["travel_routes"] = routes
    return ctx.facts["travel_routes"]


def authenticate(ctx: Context) -> Action | None:
    api = ctx.instances[TRAVEL]
    if api.access_token is not None and ctx.rng.random() < 0.8:
        return None
    args = {"client_id": f"client_{vocab.digits(ctx.rng, 5)}", "client_secret": vocab.password(ctx.rng),
            "refresh_token": f"refresh_{vocab.digits(ctx.rng, 8)}", "grant_type": "read_write",
            "user_first_name": api.user_first_name, "user_last_name": api.user_last_name}
    return Action(f"sign me in to the travel system: client ID {quoted(args['client_id'])}, client secret "
                  f"{quoted(args['client_secret'])}, refresh token {quoted(args['refresh_token'])}, grant type "
                  f"'read_write', name {args['user_first_name']} {args['user_last_name']}",
                  [Call("authenticate_travel", args)], remember=_token_returned)


def flight_cost(ctx: Context) -> Action | None:
    origin, target = ctx.rng.choice(_routes(ctx))
    date, travel_class = _date(ctx), ctx.rng.choice(["economy", "business", "first"])
    args = {"travel_from": origin, "travel_to": target, "travel_date": date, "travel_class": travel_class}
    return Action(f"tell me what {_article(travel_class)} flight from {origin} to {target} on {date} costs",
                  [Call("get_flight_cost", args)],
                  Missing(f"tell me what {_article(travel_class)} flight from {origin} to {target} costs",
                          "On which date would you fly?", f"On {date}."))


def nearest_airport(ctx: Context) -> Action | None:
    city = ctx.rng.choice(CITIES)
    return Action(f"find the airport nearest to {city}", [Call("get_nearest_airport_by_city", {"location": city})])


def book_flight(ctx: Context) -> Action | None:
    token, token_words, waits = _token(ctx)
    if token is None or not _cards(ctx):
        return None
    card = ctx.rng.choice(_cards(ctx))
    origin, target = ctx.rng.choice(_routes(ctx))
    date, travel_class = _date(ctx), ctx.rng.choice(["economy", "economy", "business"])
    args = {"access_token": token, "card_id": card, "travel_date": date, "travel_from": origin, "travel_to": target,
            "travel_class": travel_class}
    trip = f"{_article(travel_class)} flight from {origin} to {target} on {date}"
    return Action(f"book {trip} with my card {quoted(card)}{token_words}", [Call("book_flight", args, new_step=waits)],
                  Missing(f"book {trip}{token_words}", "Which card should I charge for the flight?",
                          f"Use the card with ID {quoted(card)}."),
                  remember=lambda c, r: (_remember_booking(c, r), _token_known(c, r)))


def _booking_reference(ctx: Context) -> tuple[str, str, bool] | None:
    api = ctx.instances[TRAVEL]
    made = [b for b in ctx.facts.get("bookings_made") or [] if b in api.booking_record]
    if made:
        return made[-1], "the flight you just booked", True
    return None


def _on_booking(ctx: Context, say: str, name: str) -> Action | None:
    """`name(access_token, booking_id)` on the flight booked earlier in the conversation; `say` with "{}" for it."""
    token, token_words, waits = _token(ctx)
    ref = _booking_reference(ctx)
    if token is None or ref is None:
        return None
    return Action(say.format(ref[1]) + token_words,
                  [Call(name, {"access_token": token, "booking_id": ref[0]}, new_step=ref[2] or waits)],
                  remember=_token_known)


def cancel_booking(ctx: Context) -> Action | None:
    return _on_booking(ctx, "cancel {}", "cancel_booking")


def invoice(ctx: Context) -> Action | None:
    return _on_booking(ctx, "get me the invoice of {}", "retrieve_invoice")


def insurance(ctx: Context) -> Action | None:
    api = ctx.instances[TRAVEL]
    token, token_words, waits = _token(ctx)
    ref = _booking_reference(ctx)
    if token is None or ref is None:
        return None
    card = api.booking_record[ref[0]]["card_id"]
    kind, cost = ctx.rng.choice(["comprehensive", "cancellation", "baggage"]), ctx.rng.randint(2, 12) * 10
    return Action(f"buy {kind} insurance for {ref[1]} for {money(cost)}, paid with the same card{token_words}",
                  [Call("purchase_insurance", {"access_token": token, "insurance_type": kind, "booking_id": ref[0],
                                               "insurance_cost": cost, "card_id": card}, new_step=ref[2] or waits)],
                  remember=_token_known)


def support(ctx: Context) -> Action | None:
    ref = _booking_reference(ctx)
    if ref is None:
        return None
    text = vocab.sentence(ctx.rng)
    return Action(f"tell customer support about {ref[1]}: {quoted(text)}",
                  [Call("contact_customer_support", {"booking_id": ref[0], "message": text}, new_step=ref[2])])


def booking_history(ctx: Context) -> Action | None:
    token, token_words, waits = _token(ctx)
    if token is None:
        return None
    return Action(f"show me my booking history{token_words}",
                  [Call("get_booking_history", {"access_token": token}, new_step=waits)],
                  remember=_token_known)


def card_balance(ctx: Context) -> Action | None:
    token, token_words, waits = _token(ctx)
    if token is None or not _cards(ctx):
        return None
    card = ctx.rng.choice(_cards(ctx))
    return Action(f"tell me the balance of my card {quoted(card)}{token_words}",
                  [Call("get_credit_card_balance", {"access_token": token, "card_id": card}, new_step=waits)],
                  remember=_token_known)


def register_card(ctx: Context) -> Action | None:
    api = ctx.instances[TRAVEL]
    token, token_words, waits = _token(ctx)
    if token is None or api.token_expires_in is None:
        return None
    number = vocab.digits(ctx.rng, 16)
    expiry = f"{ctx.rng.randint(1, 12):02d}/{ctx.rng.randint(2027, 2033)}"
    holder, cvv = f"{api.user_first_name} {api.user_last_name}", ctx.rng.randint(100, 999)
    return Action(f"register my credit card {number}, expiring {expiry}, holder {holder}, security code {cvv}"
                  f"{token_words}",
                  [Call("register_credit_card", {"access_token": token, "card_number": number,
                                                 "expiration_date": expiry, "cardholder_name": holder,
                                                 "card_verification_number": cvv}, new_step=waits)],
                  remember=_remember_card)


def exchange(ctx: Context) -> Action | None:
    currency, value = ctx.rng.choice(CURRENCIES), ctx.rng.randint(2, 400) * 5
    if ctx.rng.random() < 0.5:
        base, target = "USD", currency
    else:
        base, target = currency, "USD"
    return Action(f"convert {int(value)} {base} into {target}",
                  [Call("compute_exchange_rate", {"base_currency": base, "target_currency": target, "value": value})])


def budget(ctx: Context) -> Action | None:
    token, token_words, waits = _token(ctx)
    if token is None:
        return None
    limit = ctx.rng.randint(1, 30) * 50
    return Action(f"set my travel budget limit to {money(limit)}{token_words}",
                  [Call("set_budget_limit", {"access_token": token, "budget_limit": limit}, new_step=waits)],
                  remember=_token_known)


def verify_traveler(ctx: Context) -> Action | None:
    api = ctx.instances[TRAVEL]
    born = f"{ctx.rng.randint(1955, 1995)}-{ctx.rng.randint(1, 12):02d}-{ctx.rng.randint(1, 28):02d}"
    passport = f"US{vocab.digits(ctx.rng, 7)}"
    return Action(f"verify my traveler information: {api.user_first_name} {api.user_last_name}, born {born}, "
                  f"passport number {passport}",
                  [Call("verify_traveler_information", {"first_name": api.user_first_name,
                                                        "last_name": api.user_last_name, "date_of_birth": born,
                                                        "passport_number": passport})])


all_cards = asks("list all the credit cards registered in the travel system", "get_all_credit_cards")


TRADING_SAMPLERS = [(3, trading_login), (0.6, symbol_by_name), (1, stock_info), (3, place_order), (1, cancel_order),
                    (1, order_details), (0.6, account_info), (1, fund), (0.8, withdraw), (1, watch), (0.8, unwatch),
                    (0.6, watchlist), (0.5, order_history), (0.5, sector), (0.7, filter_by_price),
                    (0.6, price_alert), (0.2, trading_logout), (0.4, transactions),
                    (0.2, asks("tell me the current time on the trading platform", "get_current_time")),
                    (0.2, asks("check whether I am logged in to my trading account", "trading_get_login_status"))]
TRAVEL_SAMPLERS = [(1, authenticate), (1, flight_cost), (0.6, nearest_airport), (3, book_flight),
                   (1, cancel_booking), (1, invoice), (0.8, insurance), (0.6, support), (0.6, booking_history),
                   (0.8, card_balance), (0.6, register_card), (0.8, exchange), (0.6, budget), (0.6, verify_traveler),
                   (0.4, all_cards), (0.2, asks("list every airport you can book", "list_all_airports")),
                   (0.2, asks("tell me the budget fiscal year", "get_budget_fiscal_year")),
                   (0.2, asks("check whether I am logged in to the travel system", "travel_get_login_status"))]
