# Get the live tracking status of ORD-20877; if the carrier is down, fail loudly so I know.
import asyncio


class TrackingUnavailable(Exception):
    pass


async def main():
    order = await get_order(order_id="ORD-20877")
    try:
        return await track_shipment(tracking_number=order["shipping"]["tracking_number"])
    except RuntimeError as e:
        raise TrackingUnavailable(f"no live tracking for {order['order_id']}") from e


result = asyncio.run(main())
result
