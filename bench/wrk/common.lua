-- common.lua — what every transitd wrk script shares.
--
-- Why it exists: each endpoint script only says how to build one request
-- path from the input lists; the per-thread request lists, the non-2xx
-- counting and the closing JSON line are the same everywhere and live here.
--
-- Inputs: the runner (bench/run_bench.py) writes the lists into the folder
-- named by $TRANSITD_BENCH_INPUTS, one item per line, already URL-encoded:
--   stops.txt   stop ids (location_type 0 or 1)
--   points.txt  "lat lon": a stop's coordinates plus a few hundred metres of jitter
--   times.txt   local date-times without offset, on one service date
--   queries.txt stop-name search strings
--   trips.txt   trip ids
-- $TRANSITD_BENCH_SEED (default 42) seeds the draws; each thread adds its id,
-- so every thread has its own, reproducible request list.
--
-- Output: done() prints one line starting with {"bench":"wrk" that the
-- runner parses: requests, req/s, bytes, latency percentiles (µs), failed
-- responses (status >= 400; by status with TRANSITD_BENCH_STATUSES=1), and
-- wrk's socket errors.

local common = {}

local LIST_SIZE = 4096

local function read_lines(name)
  local dir = os.getenv("TRANSITD_BENCH_INPUTS")
  if not dir or dir == "" then
    error("TRANSITD_BENCH_INPUTS is not set (the folder of input lists written by bench/run_bench.py)")
  end
  local path = dir .. "/" .. name
  local f = io.open(path, "r")
  if not f then
    error("cannot open input list " .. path)
  end
  local lines = {}
  for line in f:lines() do
    line = line:gsub("\r$", "")
    if line ~= "" then
      lines[#lines + 1] = line
    end
  end
  f:close()
  if #lines == 0 then
    error("input list " .. path .. " is empty")
  end
  return lines
end

-- The lists, read once per thread state on first use.
local lists = {}
function common.list(name)
  if not lists[name] then
    lists[name] = read_lines(name)
  end
  return lists[name]
end

function common.pick(name)
  local l = common.list(name)
  return l[math.random(#l)]
end

-- A random point: "lat=..&lon=.."
function common.point_params()
  local lat, lon = common.pick("points.txt"):match("^(%S+)%s+(%S+)$")
  if not lat then
    error("points.txt lines must be 'lat lon'")
  end
  return "lat=" .. lat .. "&lon=" .. lon
end

-- Request builders shared by the endpoint scripts and the mix.
common.paths = {}

function common.paths.nearby_stops()
  return "/v1/stops/nearby?" .. common.point_params() .. "&radius=500&limit=20"
end

function common.paths.stop_departures()
  return "/v1/stops/" .. common.pick("stops.txt") .. "/departures?time=" ..
    common.pick("times.txt") .. "&window=60&limit=50"
end

function common.paths.departures()
  return "/v1/departures?" .. common.point_params() .. "&radius=500&time=" ..
    common.pick("times.txt") .. "&window=60&limit=50"
end

-- The large-response throughput case: many stops, many departures.
function common.paths.departures_large()
  return "/v1/departures?" .. common.point_params() .. "&radius=1000&time=" ..
    common.pick("times.txt") .. "&window=60&limit=500"
end

function common.paths.stop()
  return "/v1/stops/" .. common.pick("stops.txt")
end

function common.paths.search()
  return "/v1/stops?q=" .. common.pick("queries.txt")
end

function common.paths.trip()
  return "/v1/trips/" .. common.pick("trips.txt")
end

function common.paths.routes()
  return "/v1/routes"
end

-- Minimal JSON encoding for the closing line (numbers, strings, tables with
-- string keys).
-- The "iPhone app" mix of mix.lua and mix_alerts.lua: 60 % nearby
-- departures, 25 % stop departures, 10 % stop search, 5 % trip detail.
common.IPHONE_MIX = {
  { kind = "departures", weight = 60 },
  { kind = "stop_departures", weight = 25 },
  { kind = "search", weight = 10 },
  { kind = "trip", weight = 5 },
}

-- A function that draws one request of `mix` by weight: path, kind.
function common.weighted(mix)
  local total_weight = 0
  for _, m in ipairs(mix) do
    total_weight = total_weight + m.weight
  end
  return function()
    local r = math.random() * total_weight
    for _, m in ipairs(mix) do
      if r < m.weight then
        return common.paths[m.kind](), m.kind
      end
      r = r - m.weight
    end
    local last = mix[#mix]
    return common.paths[last.kind](), last.kind
  end
end

local function encode(v)
  local t = type(v)
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then
      return "null"
    end
    if v == math.floor(v) and math.abs(v) < 1e15 then
      return string.format("%d", v)
    end
    return string.format("%.3f", v)
  elseif t == "string" then
    return '"' .. v:gsub('[%c"\\]', function(c)
      return string.format("\\u%04x", c:byte())
    end) .. '"'
  elseif t == "boolean" then
    return tostring(v)
  elseif t == "table" then
    local keys = {}
    for k in pairs(v) do
      keys[#keys + 1] = tostring(k)
    end
    table.sort(keys)
    local parts = {}
    for _, k in ipairs(keys) do
      local val = v[k]
      if val == nil then
        val = v[tonumber(k)]
      end
      parts[#parts + 1] = encode(k) .. ":" .. encode(val)
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return "null"
end
common.encode = encode

-- Installs wrk's callbacks. `build_path` returns one request path (and,
-- optionally, a kind label counted in the closing line, for the mix, and a
-- method, headers and body for requests other than GET).
function common.install(script_name, build_path)
  local threads = {}
  local next_id = 1

  -- Runs in the main state once per thread, before the threads start.
  function setup(thread)
    thread:set("id", next_id)
    next_id = next_id + 1
    threads[#threads + 1] = thread
  end

  -- Runs in each thread's own state: build this thread's request list.
  function init(args)
    local seed = tonumber(os.getenv("TRANSITD_BENCH_SEED") or "42") or 42
    math.randomseed(seed * 1000 + (id or 0))
    requests_list = {}
    kinds = {}
    -- TRANSITD_BENCH_QUERY_EXTRA ("realtime=scheduled"): appended to every GET's query string
    local extra = os.getenv("TRANSITD_BENCH_QUERY_EXTRA")
    for i = 1, LIST_SIZE do
      local path, kind, method, headers, body = build_path()
      if extra and extra ~= "" and (method or "GET") == "GET" then
        path = path .. (path:find("?", 1, true) and "&" or "?") .. extra
      end
      requests_list[i] = wrk.format(method or "GET", path, headers, body)
      if kind then
        kinds[kind] = (kinds[kind] or 0) + 1
      end
    end
    cursor = 0
    non2xx = 0
    statuses = {}
  end

  function request()
    cursor = cursor + 1
    if cursor > LIST_SIZE then
      cursor = 1
    end
    return requests_list[cursor]
  end

  -- A response() callback makes wrk keep every body and hand it to Lua as
  -- a string: client work that grows with the body, on the same cores as
  -- the server. It would tax a 17 KB departures body far more than the
  -- baseline's few bytes, so by default wrk counts the failures itself
  -- (summary.errors.status: every status >= 400) and only
  -- TRANSITD_BENCH_STATUSES=1 installs the callback, to break them down
  -- by status.
  if os.getenv("TRANSITD_BENCH_STATUSES") == "1" then
    function response(status, headers, body)
      if status < 200 or status > 299 then
        non2xx = non2xx + 1
        local key = tostring(status)
        statuses[key] = (statuses[key] or 0) + 1
      end
    end
  end

  -- Runs in the main state after the run: gather the threads' counts.
  function done(summary, latency, requests)
    local total_non2xx = 0
    local by_status = {}
    local by_kind = {}
    for _, thread in ipairs(threads) do
      total_non2xx = total_non2xx + (thread:get("non2xx") or 0)
      for k, n in pairs(thread:get("statuses") or {}) do
        by_status[k] = (by_status[k] or 0) + n
      end
      for k, n in pairs(thread:get("kinds") or {}) do
        by_kind[k] = (by_kind[k] or 0) + n
      end
    end
    if os.getenv("TRANSITD_BENCH_STATUSES") ~= "1" then
      total_non2xx = summary.errors.status
    end
    local seconds = summary.duration / 1e6
    local out = {
      bench = "wrk",
      script = script_name,
      threads = #threads,
      requests = summary.requests,
      duration_s = seconds,
      bytes = summary.bytes,
      req_per_s = seconds > 0 and summary.requests / seconds or 0,
      mb_per_s = seconds > 0 and summary.bytes / seconds / 1e6 or 0,
      latency_us = {
        p50 = latency:percentile(50),
        p90 = latency:percentile(90),
        p99 = latency:percentile(99),
        max = latency.max,
        mean = latency.mean,
      },
      non2xx = total_non2xx,
      statuses = by_status,
      socket_errors = {
        connect = summary.errors.connect,
        read = summary.errors.read,
        write = summary.errors.write,
        timeout = summary.errors.timeout,
      },
    }
    if next(by_kind) then
      out.request_list_kinds = by_kind
    end
    io.write(encode(out), "\n")
  end
end

return common
