"""Requests on bfcl-eval's MessageAPI, TwitterAPI and TicketAPI, sampled from the live instances (who is logged
in, which users, messages, tweets and tickets exist). A request that needs a login is only asked once the
conversation has logged in (the user gives the credentials in words). Standard library only."""

from __future__ import annotations

import re

from agentic_verl.data.bfcl_multi_turn import core, vocab
from agentic_verl.data.bfcl_multi_turn.core import Action, Call, Context, Missing, asks, join_words, quoted

MESSAGE, TWITTER, TICKET = "MessageAPI", "TwitterAPI", "TicketAPI"
# what later requests refer to: the ids the calls gave
_remember_tweet = core.remember_id("tweets_posted", "id")
_remember_ticket = core.remember_id("tickets_created", "id")


def _keyword(ctx: Context, texts: list[str]) -> str | None:
    words = sorted({w.lower() for text in texts for w in re.findall(r"[A-Za-z]{5,}", text)})
    return ctx.rng.choice(words) if words else None


# -- MessageAPI -------------------------------------------------------------------------------------
def _message_logged_in(ctx: Context) -> bool:
    return bool(ctx.instances[MESSAGE].current_user)


def _twitter_logged_in(ctx: Context) -> bool:
    return ctx.instances[TWITTER].authenticated


def _ticket_logged_in(ctx: Context) -> bool:
    return bool(ctx.instances[TICKET].current_user)


def _messages(ctx: Context):
    api = ctx.instances[MESSAGE]
    return api, {user_id: name for name, user_id in api.user_map.items()}


def message_login(ctx: Context) -> Action | None:
    api, names = _messages(ctx)
    if api.current_user:
        return None
    user_id = ctx.rng.choice(sorted(names))
    if ctx.rng.random() < 0.5:
        return Action(f"log me in to the messaging app as {names[user_id]}",
                      [Call("get_user_id", {"user": names[user_id]}),
                       Call("message_login", {"user_id": user_id}, new_step=True)])
    return Action(f"log in to the messaging app with my user ID {quoted(user_id)}",
                  [Call("message_login", {"user_id": user_id})],
                  Missing("log me in to the messaging app", "Which user ID should I log in with?",
                          f"Use {quoted(user_id)}."))  # not BFCL's own "My user id is 'USR001'."


def send_message(ctx: Context) -> Action | None:
    api, names = _messages(ctx)
    if not api.current_user:
        return None
    receiver = ctx.rng.choice(sorted(user_id for user_id in names if user_id != api.current_user))
    text = vocab.sentence(ctx.rng)
    return Action(f"send {names[receiver]} the message {quoted(text)}",
                  [Call("get_user_id", {"user": names[receiver]}),
                   Call("send_message", {"receiver_id": receiver, "message": text}, new_step=True)],
                  Missing(f"send {names[receiver]} a message", "What should the message say?",
                          f"Tell them {quoted(text)}."))


view_sent = asks("show me all the messages I have sent", "view_messages_sent", when=_message_logged_in)


def delete_message(ctx: Context) -> Action | None:
    api, names = _messages(ctx)
    receivers = sorted({next(iter(message)) for message in api.inbox} & set(names))
    if not api.current_user or not receivers:
        return None
    receiver = ctx.rng.choice(receivers)
    return Action(f"delete the latest message I sent to {names[receiver]}",
                  [Call("get_user_id", {"user": names[receiver]}),
                   Call("delete_message", {"receiver_id": receiver}, new_step=True)])


def add_contact(ctx: Context) -> Action | None:
    api, _ = _messages(ctx)
    name = vocab.pick(ctx.rng, vocab.FIRST_NAMES, api.user_map)
    return Action(f"add {name} to my contacts", [Call("add_contact", {"user_name": name})],
                  Missing("add a new contact for me", "What is the new contact's name?", f"The name is {name}."))


def search_messages(ctx: Context) -> Action | None:
    api, _ = _messages(ctx)
    word = _keyword(ctx, [next(iter(message.values())) for message in api.inbox])
    if not api.current_user or word is None:
        return None
    return Action(f"search my messages for {quoted(word)}", [Call("search_messages", {"keyword": word})],
                  Missing("search my messages for a keyword", "Which keyword should I search for?",
                          f"Search for {quoted(word)}."))


message_stats = asks("give me my messaging statistics", "get_message_stats", when=_message_logged_in)


list_users = asks("list every user in the workspace", "list_users")


# -- TwitterAPI -------------------------------------------------------------------------------------
def twitter_login(ctx: Context) -> Action | None:
    api = ctx.instances[TWITTER]
    if api.authenticated:
        return None
    return Action(f"sign in to my Twitter account with username {quoted(api.username)} and password "
                  f"{quoted(api.password)}",
                  [Call("authenticate_twitter", {"username": api.username, "password": api.password})],
                  Missing(f"sign in to my Twitter account, username {quoted(api.username)}",
                          "What is the password of that account?", f"The password is {quoted(api.password)}."))


def post_tweet(ctx: Context) -> Action | None:
    api = ctx.instances[TWITTER]
    if not api.authenticated:
        return None
    text = vocab.sentence(ctx.rng)
    tags = [f"#{t}" for t in ctx.rng.sample(vocab.TOPICS, ctx.rng.randint(0, 2))]
    mentions = [f"@{vocab.handle(ctx.rng)}" for _ in range(ctx.rng.randint(0, 1))]
    extras = [f"the tag{'s' if len(tags) > 1 else ''} {join_words(tags)}"] if tags else []
    extras += [f"a mention of {mentions[0]}"] if mentions else []
    with_words = f" with {join_words(extras)}" if extras else ""
    return Action(f"post a tweet saying {quoted(text)}{with_words}",
                  [Call("post_tweet", {"content": text, "tags": tags, "mentions": mentions})],
                  Missing(f"post a new tweet{with_words}", "What should the tweet say?",
                          f"It should say {quoted(text)}."),
                  remember=_remember_tweet)


def _tweet_reference(ctx: Context, allow_own: bool = True) -> tuple[int, str, bool] | None:
    """(tweet id, how the user names it, whether the id came from an output): the tweet posted in this
    conversation, or one named by its id."""
    api = ctx.instances[TWITTER]
    posted = ctx.facts.get("tweets_posted") or []
    if allow_own and posted and ctx.rng.random() < 0.6:
        return posted[-1], "the tweet you just posted", True
    if not api.tweets:
        return None
    tweet_id = ctx.rng.choice(sorted(api.tweets))
    return tweet_id, f"tweet number {tweet_id}", False


def retweet(ctx: Context) -> Action | None:
    api = ctx.instances[TWITTER]
    done = set(api.retweets.get(api.username, []))
    candidates = sorted(i for i, tweet in api.tweets.items() if tweet["username"] != api.username and i not in done)
    if not api.authenticated or not candidates:
        return None
    tweet_id = ctx.rng.choice(candidates)
    return Action(f"retweet tweet number {tweet_id}", [Call("retweet", {"tweet_id": tweet_id})])


def comment(ctx: Context) -> Action | None:
    api = ctx.instances[TWITTER]
    ref = _tweet_reference(ctx)
    if not api.authenticated or ref is None:
        return None
    text = vocab.sentence(ctx.rng)
    return Action(f"comment {quoted(text)} on {ref[1]}",
                  [Call("comment", {"tweet_id": ref[0], "comment_content": text}, new_step=ref[2])],
                  Missing(f"leave a comment on {ref[1]}", "What should the comment say?", f"Comment {quoted(text)}."))


def mention(ctx: Context) -> Action | None:
    ref = _tweet_reference(ctx)
    if ref is None:
        return None
    users = [vocab.handle(ctx.rng) for _ in range(ctx.rng.randint(1, 2))]
    return Action(f"mention the users {join_words([quoted(u) for u in users])} in {ref[1]}",
                  [Call("mention", {"tweet_id": ref[0], "mentioned_usernames": users}, new_step=ref[2])])


def follow(ctx: Context) -> Action | None:
    api = ctx.instances[TWITTER]
    if not api.authenticated:
        return None
    user = vocab.handle(ctx.rng, api.following_list)
    return Action(f"follow {quoted(user)}", [Call("follow_user", {"username_to_follow": user})])


def unfollow(ctx: Context) -> Action | None:
    if (user := core.choose(ctx, ctx.instances[TWITTER].following_list, when=_twitter_logged_in)) is None:
        return None
    return Action(f"unfollow {quoted(user)}", [Call("unfollow_user", {"username_to_unfollow": user})])


list_following = asks("show me everyone I follow", "list_all_following", when=_twitter_logged_in)


def get_tweet(ctx: Context) -> Action | None:
    ref = _tweet_reference(ctx, allow_own=False)
    return None if ref is None else Action(f"show me {ref[1]}", [Call("get_tweet", {"tweet_id": ref[0]})])


def user_tweets(ctx: Context) -> Action | None:
    api = ctx.instances[TWITTER]
    authors = sorted({tweet["username"] for tweet in api.tweets.values()})
    if not authors:
        return None
    user = ctx.rng.choice(authors)
    return Action(f"list all tweets by {quoted(user)}", [Call("get_user_tweets", {"username": user})])


def search_tweets(ctx: Context) -> Action | None:
    word = _keyword(ctx, [tweet["content"] for tweet in ctx.instances[TWITTER].tweets.values()])
    if word is None:
        return None
    return Action(f"search tweets for {quoted(word)}", [Call("search_tweets", {"keyword": word})])


def tweet_comments(ctx: Context) -> Action | None:
    api = ctx.instances[TWITTER]
    if not api.comments:
        return None
    tweet_id = ctx.rng.choice(sorted(api.comments))
    return Action(f"show the comments on tweet number {tweet_id}", [Call("get_tweet_comments", {"tweet_id": tweet_id})])


def user_stats(ctx: Context) -> Action | None:
    api = ctx.instances[TWITTER]
    user = ctx.rng.choice(sorted({api.username, *(tweet["username"] for tweet in api.tweets.values())}))
    return Action(f"give me the statistics of the user {quoted(user)}", [Call("get_user_stats", {"username": user})])


# -- TicketAPI --------------------------------------------------------------------------------------
def ticket_login(ctx: Context) -> Action | None:
    api = ctx.instances[TICKET]
    if api.current_user:
        return None
    owners = sorted({ticket["created_by"] for ticket in api.ticket_queue}) or [ctx.rng.choice(vocab.HANDLE_PARTS)]
    user, secret = ctx.rng.choice(owners), vocab.password(ctx.rng)
    return Action(f"log in to the ticket system as {quoted(user)} with password {quoted(secret)}",
                  [Call("ticket_login", {"username": user, "password": secret})],
                  Missing(f"log in to the ticket system as {quoted(user)}", "What is your ticket system password?",
                          f"It is {quoted(secret)}."))


def create_ticket(ctx: Context) -> Action | None:
    api = ctx.instances[TICKET]
    if not api.current_user:
        return None
    title = " ".join([ctx.rng.choice(vocab.ADJECTIVES).capitalize(), ctx.rng.choice(vocab.NOUNS),
                      ctx.rng.choice(vocab.VERBS)])
    description, priority = vocab.sentence(ctx.rng), ctx.rng.randint(1, 5)
    details = f"the description {quoted(description)} and priority {priority}"
    return Action(f"open a support ticket titled {quoted(title)} with {details}",
                  [Call("create_ticket", {"title": title, "description": description, "priority": priority})],
                  Missing(f"open a support ticket with {details}", "What title should the ticket have?",
                          f"Title it {quoted(title)}."), remember=_remember_ticket)


def _ticket_reference(ctx: Context, usable) -> tuple[int, str, bool] | None:
    """(ticket id, how the user names it, whether the id came from an output), among the tickets `usable` accepts."""
    api = ctx.instances[TICKET]
    created = [i for i in ctx.facts.get("tickets_created") or [] if usable(api._find_ticket(i))]
    if created and ctx.rng.random() < 0.6:
        return created[-1], "the ticket you just opened", True
    ids = [ticket["id"] for ticket in api.ticket_queue if usable(ticket)]
    if not ids:
        return None
    ticket_id = ctx.rng.choice(ids)
    return ticket_id, f"ticket #{ticket_id}", False


def get_ticket(ctx: Context) -> Action | None:
    ref = _ticket_reference(ctx, lambda ticket: True)
    if ref is None:
        return None
    return Action(f"show me {ref[1]}", [Call("get_ticket", {"ticket_id": ref[0]}, new_step=ref[2])])


def close_ticket(ctx: Context) -> Action | None:
    ref = _ticket_reference(ctx, lambda ticket: ticket["status"] != "Closed")
    if ref is None:
        return None
    return Action(f"close {ref[1]}", [Call("close_ticket", {"ticket_id": ref[0]}, new_step=ref[2])])


def resolve_ticket(ctx: Context) -> Action | None:
    ref = _ticket_reference(ctx, lambda ticket: ticket["status"] != "Resolved")
    if ref is None:
        return None
    note = vocab.sentence(ctx.rng)
    return Action(f"resolve {ref[1]} with the resolution {quoted(note)}",
                  [Call("resolve_ticket", {"ticket_id": ref[0], "resolution": note}, new_step=ref[2])],
                  Missing(f"mark {ref[1]} as resolved", "What resolution should I record?",
                          f"Record {quoted(note)} as the resolution."))


def edit_ticket(ctx: Context) -> Action | None:
    ref = _ticket_reference(ctx, lambda ticket: True)
    if ref is None:
        return None
    if ctx.rng.random() < 0.5:
        priority = ctx.rng.randint(1, 5)
        return Action(f"change the priority of {ref[1]} to {priority}",
                      [Call("edit_ticket", {"ticket_id": ref[0], "updates": {"priority": priority}}, new_step=ref[2])])
    description = vocab.sentence(ctx.rng)
    return Action(f"replace the description of {ref[1]} with {quoted(description)}",
                  [Call("edit_ticket", {"ticket_id": ref[0], "updates": {"description": description}},
                        new_step=ref[2])])


def my_tickets(ctx: Context) -> Action | None:
    if not ctx.instances[TICKET].current_user:
        return None
    status = ctx.rng.choice([None, "Open", "Closed"])
    if status is None:
        return Action("list all the tickets I have created", [Call("get_user_tickets", {})])
    return Action(f"list my tickets whose status is {quoted(status)}", [Call("get_user_tickets", {"status": status})])


ticket_logout = asks("log me out of the ticket system", "logout", when=_ticket_logged_in)


MESSAGE_SAMPLERS = [(3, message_login), (3, send_message), (1, view_sent), (1, delete_message), (1, add_contact),
                    (1, search_messages), (0.6, message_stats), (0.6, list_users),
                    (0.2, asks("check whether I am logged in to the messaging app", "message_get_login_status"))]
TWITTER_SAMPLERS = [(3, twitter_login), (3, post_tweet), (1, retweet), (1.5, comment), (0.8, mention), (1, follow),
                    (0.8, unfollow), (0.6, list_following), (0.6, get_tweet), (0.6, user_tweets), (0.8, search_tweets),
                    (0.8, tweet_comments), (0.5, user_stats),
                    (0.2, asks("tell me whether I am signed in to Twitter", "posting_get_login_status"))]
TICKET_SAMPLERS = [(3, ticket_login), (3, create_ticket), (1, get_ticket), (1, close_ticket), (1, resolve_ticket),
                   (1, edit_ticket), (1, my_tickets), (0.3, ticket_logout),
                   (0.2, asks("check whether I am logged in to the ticket system", "ticket_get_login_status"))]
