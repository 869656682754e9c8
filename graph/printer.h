// Program -> canonical .dfz text. For any program p that ValidateProgram
// accepts, ParseProgram(PrintProgram(p)) == p, floats bit for bit (a NaN keeps
// its sign, not its payload), and printing is a fixed point after one parse.
#pragma once

#include <string>
#include <string_view>

#include "graph/program.h"

namespace divfuzz::graph {

std::string PrintProgram(const Program& program);

std::string PrintLiteral(const Literal& literal);               // 2.0, [1, 2], %x, "s", f32 ...
std::string PrintType(const TensorType& type);                  // f32[4,8]
std::string PrintPayload(const Payload& payload, DType dtype);  // fill(0.5), values(...) ...

// Shortest decimal that parses back to the same double, always marked as a
// float ("2.0", "-0.0", "1e-05"); "inf", "-inf", "nan", "-nan", and for a NaN
// other than the canonical quiet one its float64 fraction: "-nan_0xfe00000000000".
std::string FormatFloat(double v);
// Exact C99 hex float, normalized ("0x1.8p-3", "-0x0p+0", "0x1p-1074"), or
// the words above for inf and nan.
std::string FormatHexFloat(double v);
// A double-quoted string literal with \" \\ \n \t \r and \xHH escapes.
std::string QuoteString(std::string_view s);

}  // namespace divfuzz::graph
