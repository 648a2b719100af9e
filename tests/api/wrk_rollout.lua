-- wrk_rollout.lua — the load of the loopback deployment test (test_deploy_topology.py).
--
-- Why it exists: a feed rollout behind the load balancer must not fail a single
-- request. The request lists, the per-status counting (TRANSITD_BENCH_STATUSES=1, set
-- by the test, makes every response be looked at) and the closing JSON line are the
-- benchmarks' own (bench/wrk/common.lua); this only says what to ask: a mix of cheap
-- and heavy answers naming no stop or trip id, valid for the old and the new feed alike.
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local common = dofile(here .. "../../bench/wrk/common.lua")

local paths = {
  "/v1/feed",
  "/v1/departures?lat=52.5271&lon=13.2343&radius=800&time=2026-11-23T08:00&limit=50",
  "/v1/stops/nearby?lat=52.5271&lon=13.2343&radius=800",
  "/v1/routes",
  "/readyz",
  "/v1/stops?q=a&limit=5",
  "/",
}
local next_path = 0

common.install("rollout", function()
  next_path = next_path % #paths + 1
  return paths[next_path]
end)
