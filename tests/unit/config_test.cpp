#include "shim/process/config.h"

#include <catch2/catch.hpp>

using cudnn_fastpath::shim::parse_boolean;

TEST_CASE("booleans accept 1/0, true/false, yes/no, on/off in any case", "[config]") {
  for (const char* text : {"1", "true", "TRUE", "yes", "Yes", "on", "ON"}) {
    bool value = false;
    CHECK(parse_boolean(text, value));
    CHECK(value);
  }
  for (const char* text : {"0", "false", "False", "no", "NO", "off", "Off"}) {
    bool value = true;
    CHECK(parse_boolean(text, value));
    CHECK_FALSE(value);
  }
}

TEST_CASE("anything else is refused and leaves the default alone", "[config]") {
  for (const char* text : {"2", "maybe", "y", "n", " 1", "1 ", "enable", "-1", "truee"}) {
    bool value = true;
    CHECK_FALSE(parse_boolean(text, value));
    CHECK(value);
  }
}
