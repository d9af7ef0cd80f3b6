// The logical graph under construction, shared by an environment and its streams.
#pragma once

#include <memory>

#include "weir/detail/runtime/stream_graph.h"

namespace weir::detail {

class GraphBuilder {
 public:
  Transformation& add(Transformation::Kind kind, std::string name, std::vector<int> inputs,
                      std::shared_ptr<const StreamType> type) {
    auto node = std::make_shared<Transformation>();
    node->id = static_cast<int>(graph.nodes.size());
    node->kind = kind;
    node->name = std::move(name);
    node->inputs = std::move(inputs);
    node->outputType = std::move(type);
    graph.nodes.push_back(node);
    return *node;
  }
  Transformation& node(int id) { return *graph.nodes.at(static_cast<size_t>(id)); }

  StreamGraph graph;
};

}  // namespace weir::detail
