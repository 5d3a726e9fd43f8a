# How many delivery vans do we need for CUS-1042's processing orders if a van carries 8 units?
import math

orders = (await list_orders("CUS-1042", "processing"))["orders"]
pending = [o for o in orders if o["status"] == "processing"]
details = [await get_order(o["order_id"]) for o in pending]
units = sum(i["quantity"] for d in details for i in d["items"])
vans = math.ceil(units / 8)
print(f"{units} units -> {vans} vans")
