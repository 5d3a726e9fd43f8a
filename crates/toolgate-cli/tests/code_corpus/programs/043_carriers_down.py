# Track the DHL parcel JD0146000038 and the UPS parcel 1Z999AA10123456784.
import asyncio

try:
    results = await asyncio.gather(
        track_shipment("JD0146000038", "DHL"),
        track_shipment("1Z999AA10123456784", "UPS"),
    )
    print(results)
except RuntimeError as e:
    print("Carrier API error:", e)
    results = []
len(results)
