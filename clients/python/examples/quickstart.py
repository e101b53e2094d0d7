from datetime import datetime, time, timedelta
from time import sleep
from zoneinfo import ZoneInfo

import delayq

# A dict is librdkafka configuration for a producer the client makes
# (acks=all, idempotence on); or pass your own confluent_kafka.Producer,
# transactional or not.
c = delayq.Client({"bootstrap.servers": "127.0.0.1:9092"}, node=7)

r = c.submit(topic="orders", after="10m",  # or timedelta(minutes=10), or at=
             key="order-42", value=b'{"remind":"pay"}', headers=[("trace", b"abc")])
# r.id, r.at_ms (unix ms), r.at (datetime, UTC), r.input (delay-input or delay-input-slow)

c.cancel(r.id, r.at_ms)                    # this id at this due time
c.cancel_by_id(r.id)                       # this id, whatever its due time
c.reschedule(r.id, after=timedelta(hours=2))   # or at=datetime/unix ms
r = c.replace(id=r.id, topic="orders", after="3h", value=b'{"remind":"pay now"}')

# Every day at 09:00 Berlin time, 30 times, from tomorrow's 09:00;
# cancel_by_id(r.id) stops the series. Or every="1h", until=datetime/ms.
berlin = ZoneInfo("Europe/Berlin")
tomorrow9 = datetime.combine(datetime.now(berlin).date() + timedelta(days=1), time(9), tzinfo=berlin)
r = c.submit(topic="digest", at=tomorrow9, cron="0 9 * * *", tz="Europe/Berlin", count=30,
             expire_after="1h")            # delay-expire-after: not later than 1 h past due
print("series", r.id, "first at", r.at)
c.close()

# The HTTP API (delayd --roles …,api), urllib only:
api = delayq.HTTPClient("http://127.0.0.1:8080", token=None)  # token: DELAYQ_API_TOKEN
t = api.submit("orders", id="o-42", after="30m", value="remind")
for _ in range(100):                       # NotFound (404) until ingest stored it
    try:
        print(api.get("o-42"))             # {"id", "state", "at", "at_ms", …}
        break
    except delayq.NotFound:
        sleep(0.1)
api.reschedule("o-42", after="1h")
api.replace("o-42", "orders", after="2h", value="remind again")
api.cancel("o-42")                         # cancel by id
try:
    api.submit("orders", id="o-42", after="5s")
except delayq.IDCancelled as e:            # 409 once the cancel is stored: the message says until when
    print(e)
print(api.list(topic="orders", from_="now", limit=100))
