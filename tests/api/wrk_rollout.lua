-- wrk_rollout.lua — the load of the loopback deployment test (test_deploy_topology.py).
--
-- Why it exists: a feed rollout behind the load balancer must not fail a single
-- request, so every response is looked at: statuses outside 2xx are counted per
-- status, per thread, and done() prints one JSON line with the totals and wrk's
-- socket errors. The paths mix cheap and heavy answers and name no stop or trip
-- id, so they are valid for the old and the new feed alike.
local paths = {
  "/v1/feed",
  "/v1/departures?lat=52.5271&lon=13.2343&radius=800&time=2026-11-23T08:00&limit=50",
  "/v1/stops/nearby?lat=52.5271&lon=13.2343&radius=800",
  "/v1/routes",
  "/readyz",
  "/v1/stops?q=a&limit=5",
  "/",
}

local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
end

function init(args)
  cursor = 0
  non2xx = 0
  statuses = {}
end

function request()
  cursor = cursor + 1
  return wrk.format("GET", paths[(cursor % #paths) + 1])
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    local key = tostring(status)
    statuses[key] = (statuses[key] or 0) + 1
  end
end

function done(summary, latency, requests)
  local total, parts = 0, {}
  for _, thread in ipairs(threads) do
    total = total + thread:get("non2xx")
    for status, n in pairs(thread:get("statuses")) do
      parts[#parts + 1] = string.format('"%s":%d', status, n)
    end
  end
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"non2xx":%d,"statuses":{%s},"connect":%d,"read":%d,"write":%d,' ..
    '"timeout":%d,"p99_us":%d}\n',
    summary.requests, total, table.concat(parts, ","), e.connect, e.read, e.write, e.timeout,
    latency:percentile(99)))
end
