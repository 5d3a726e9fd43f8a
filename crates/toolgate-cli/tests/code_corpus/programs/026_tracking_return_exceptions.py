# Where are the parcels of CUS-1042's shipped orders?
import asyncio

orders = (await list_orders("CUS-1042", "shipped"))["orders"]
shipped = [o["order_id"] for o in orders if o["status"] == "shipped"]
details = await asyncio.gather(*[get_order(oid) for oid in shipped])
tracking = await asyncio.gather(
    *[track_shipment(d["shipping"]["tracking_number"], d["shipping"]["carrier"]) for d in details],
    return_exceptions=True,
)
for d, t in zip(details, tracking):
    if isinstance(t, Exception):
        print(f"{d['order_id']}: tracking unavailable ({type(t).__name__})")
    else:
        print(f"{d['order_id']}: {t['status']}, eta {t['eta']}")
