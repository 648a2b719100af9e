-- mix_alerts.lua — the "iPhone app" mix (mix.lua's weights) with 1 % of the
-- requests replaced by alert writes: PUT /v1/alerts/bench-<k> with a bearer
-- token, k drawn from 0 .. TRANSITD_BENCH_ALERTS - 1, so the number of active
-- alerts stays what bench/alerts_bench.py created before the run.
--
-- Why it exists: the alerts issue's target is that reads keep >= 90 % of
-- their rate with 50 active alerts and a trickle of writes; this is the
-- traffic that measures it. Each write names a random stop (from stops.txt,
-- URL-decoded) so the rows and ETags that change move around the city.
-- Env: TRANSITD_BENCH_TOKEN (required), TRANSITD_BENCH_ALERTS (default 50).
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local common = dofile(here .. "common.lua")

local WRITE_SHARE = tonumber(os.getenv("TRANSITD_BENCH_WRITE_SHARE") or "0.01") or 0.01

local token = os.getenv("TRANSITD_BENCH_TOKEN")
if not token or token == "" then
  error("TRANSITD_BENCH_TOKEN is not set (a token made by `transitd token new`)")
end
local n_alerts = tonumber(os.getenv("TRANSITD_BENCH_ALERTS") or "50") or 50

local function url_decode(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

local function write_request()
  local k = math.random(0, n_alerts - 1)
  local stop = url_decode(common.pick("stops.txt"))
  local body = '{"informed_entity":[{"stop_id":' .. common.encode(stop) .. '}],' ..
    '"effect":"DETOUR","header_text":{"translation":[{"text":"Benchmark alert ' .. k ..
    '","language":"en"}]}}'
  local headers = { ["Authorization"] = "Bearer " .. token,
                    ["Content-Type"] = "application/json" }
  return "/v1/alerts/bench-" .. k, "write", "PUT", headers, body
end

local read_request = common.weighted(common.IPHONE_MIX)

common.install("mix_alerts", function()
  if math.random() < WRITE_SHARE then
    return write_request()
  end
  return read_request()
end)
