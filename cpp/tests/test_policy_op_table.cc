// The op table (policy_op_table.h): every list of ops the graph uses comes
// from it, so its rows must be whole and agree with what add_node() does.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <stdexcept>
#include <string>

#include "evokit/policy_graph.h"
#include "policy/policy_op_table.h"

namespace evokit {
namespace {

TEST(PolicyOpTable, SupportedOpsAreTheRowsInOrder) {
  std::vector<std::string> names;
  for (const PolicyGraph::OpDef* def = ops::table_begin(); def != ops::table_end(); ++def) {
    names.emplace_back(def->name);
  }
  EXPECT_EQ(names, PolicyGraph::supported_ops());
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

TEST(PolicyOpTable, EveryNameRoundTrips) {
  for (const PolicyGraph::OpDef* def = ops::table_begin(); def != ops::table_end(); ++def) {
    EXPECT_EQ(ops::find(def->name), def) << def->name;
  }
  EXPECT_EQ(ops::find("Sin"), nullptr);
  EXPECT_EQ(ops::find("Constant"), nullptr);  // read by the ONNX translation, never a node
}

TEST(PolicyOpTable, EveryRowIsWhole) {
  for (const PolicyGraph::OpDef* def = ops::table_begin(); def != ops::table_end(); ++def) {
    SCOPED_TRACE(def->name);
    EXPECT_GE(def->min_inputs, 1);
    EXPECT_LE(def->min_inputs, def->max_inputs);
    EXPECT_GE(def->max_outputs, 1);
    ASSERT_NE(def->build, nullptr);
    ASSERT_NE(def->plan, nullptr);
    // A row that may give a step has a kernel to run it; an alias has none.
    EXPECT_EQ(def->run == nullptr, def->plan == ops::plan_alias);
    // The attributes: named first, then empty slots; each named once.
    std::set<std::string> seen;
    bool ended = false;
    for (const OpAttr& a : def->attrs) {
      if (a.name == nullptr) {
        ended = true;
        continue;
      }
      EXPECT_FALSE(ended) << a.name << " after an empty slot";
      EXPECT_TRUE(seen.insert(a.name).second) << a.name << " twice";
      EXPECT_EQ(def->attr(a.name), &a);
    }
    // build_unary reads alpha and gamma: as floats.
    for (const char* key : {"alpha", "gamma"}) {
      if (def->build == ops::build_unary && def->attr(key) != nullptr) {
        EXPECT_EQ(def->attr(key)->kind, AttrKind::kFloat) << key;
      }
    }
  }
}

// add_node() refuses, for every op, an attribute its row does not list and a
// listed one given with another kind, naming the kind.
TEST(PolicyOpTable, AddNodeChecksAttributesAgainstTheRow) {
  for (const PolicyGraph::OpDef* def = ops::table_begin(); def != ops::table_end(); ++def) {
    SCOPED_TRACE(def->name);
    std::vector<std::string> inputs(static_cast<std::size_t>(def->min_inputs), "x");
    const auto refusal = [&](const NodeAttributes& attributes) -> std::string {
      PolicyGraph g;
      g.add_input("x", {3});
      try {
        g.add_node(def->name, inputs, {"y"}, attributes, "n");
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
      return "";
    };
    NodeAttributes unknown;
    unknown.ints["zz"] = 1;
    EXPECT_EQ(refusal(unknown),
              std::string("node 'n' (") + def->name + "): unknown integer attribute 'zz'");
    for (const OpAttr& a : def->attrs) {
      if (a.name == nullptr) continue;
      NodeAttributes wrong;
      const bool is_float = a.kind == AttrKind::kFloat;
      if (is_float) {
        wrong.ints[a.name] = 1;
      } else {
        wrong.floats[a.name] = 1.0f;
      }
      EXPECT_EQ(refusal(wrong), std::string("node 'n' (") + def->name + "): unknown " +
                                    (is_float ? "integer" : "float") + " attribute '" + a.name +
                                    "'");
    }
  }
}

}  // namespace
}  // namespace evokit
