-- Runs a Neovim plugin snippet (arg[1]) with stand-ins for the plugins it configures and
-- prints, as one JSON object, the table it hands to require("codecompanion").setup or
-- require("avante").setup. A function value is printed as {"<function>": its result when
-- called with no arguments}: CodeCompanion calls an adapter given as a function that way.

local captured = nil

local function capture(opts)
  captured = opts
end

package.preload["codecompanion"] = function()
  return { setup = capture }
end
package.preload["codecompanion.adapters"] = function()
  return {
    extend = function(base, opts)
      return { ["<extends>"] = base, opts = opts }
    end,
  }
end
package.preload["avante"] = function()
  return { setup = capture }
end

local function encode_string(s)
  local escaped = s:gsub('[%c"\\]', function(c)
    return string.format("\\u%04x", c:byte())
  end)
  return '"' .. escaped .. '"'
end

local function encode(value)
  local kind = type(value)
  if kind == "string" then
    return encode_string(value)
  elseif kind == "number" or kind == "boolean" then
    return tostring(value)
  elseif kind == "function" then
    return '{"<function>":' .. encode(value()) .. "}"
  elseif kind == "table" then
    local parts = {}
    if next(value) == nil or #value > 0 then
      for _, item in ipairs(value) do
        parts[#parts + 1] = encode(item)
      end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    for key, item in pairs(value) do
      parts[#parts + 1] = encode_string(tostring(key)) .. ":" .. encode(item)
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  error("cannot encode a " .. kind)
end

dofile(arg[1])
if captured == nil then
  error("the snippet never called setup")
end
io.write(encode(captured), "\n")
