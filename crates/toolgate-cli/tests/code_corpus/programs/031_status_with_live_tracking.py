# For CUS-1042's three latest orders, show the live tracking status where the carrier has one.
import asyncio


async def status_line(order):
    detail = await get_order(order["order_id"])
    try:
        live = await track_shipment(detail["shipping"]["tracking_number"])
        return f"{order['order_id']}: {live['status']}"
    except RuntimeError:
        return f"{order['order_id']}: {order['status']} (carrier unreachable)"


orders = (await list_orders("CUS-1042", "any", 3))["orders"][:3]
lines = await asyncio.gather(*[status_line(o) for o in orders])
print("\n".join(lines))
