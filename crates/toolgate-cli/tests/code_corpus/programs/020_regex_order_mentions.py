# Which tickets mention an order number, and what state is that order in?
import re

pattern = re.compile(r"\bORD-\d{5}\b")
mentions = {}
for t in list_tickets(status="all")["tickets"]:
    found = pattern.findall(t["subject"])
    if found:
        mentions[t["id"]] = found
states = {tid: get_order(order_id=ids[0])["status"] for tid, ids in mentions.items()}
{"mentions": mentions, "order_states": states}
