// test_oracle_coverage.cpp — the oracle has a kernel for every primitive of the op table (the op table coverage
// test, tests/oracle/test_op_coverage.py, covers the independent checks and the CPU kernels).
#include <gtest/gtest.h>

#include <string>

#include "primkit/op_info.hpp"
#include "primkit/oracle.hpp"

namespace {

using pk::meta::OpInfo;

TEST(OracleCoverage, EveryPrimitiveOfTheTableIsImplemented) {
  std::string missing;
  int primitives = 0;
  for (const OpInfo *op = pk::meta::ops_begin(); op != pk::meta::ops_end(); ++op) {
    if (op->tier != pk::meta::Tier::primitive) continue;
    ++primitives;
    if (!pk::oracle::implements(op->id)) missing += std::string(missing.empty() ? "" : ", ") + op->name;
  }
  EXPECT_GT(primitives, 150);  // the table was read
  EXPECT_TRUE(missing.empty()) << "primitives without an oracle kernel: " << missing;
  // Whatever the oracle reports as unimplemented must be a composite (reports list them with the reason).
  for (const auto &[name, why] : pk::oracle::unimplemented_ops()) {
    const OpInfo *op = pk::meta::find_op(name);
    ASSERT_NE(op, nullptr) << name << " is reported unimplemented but is not a row of the op table";
    EXPECT_EQ(op->tier, pk::meta::Tier::composite) << name << ": " << why;
  }
}

// An id outside the table is not "implemented": implements() answers from the oracle's registry, not from a
// blanket yes.
TEST(OracleCoverage, AnIdOutsideTheTableIsNotImplemented) {
  EXPECT_FALSE(pk::oracle::implements(PK_OP_ID_LIMIT + 7));
  EXPECT_FALSE(pk::oracle::implements(0));
}

}  // namespace
