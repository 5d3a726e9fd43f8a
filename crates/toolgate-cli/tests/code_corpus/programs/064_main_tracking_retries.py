# Try a few times to get live tracking for ORD-20877 before giving up.
import asyncio


async def main():
    order = await get_order(order_id="ORD-20877")
    number = order["shipping"]["tracking_number"]
    for attempt in range(1, 4):
        try:
            return await track_shipment(tracking_number=number, carrier=order["shipping"]["carrier"])
        except RuntimeError as e:
            print(f"attempt {attempt} failed: {e}")
            await asyncio.sleep(0)
    return {"tracking_number": number, "status": "unknown"}


result = asyncio.run(main())
result
