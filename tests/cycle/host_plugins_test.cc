#include "kplace/cycle/host_plugins.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kplace/config/profile.h"

namespace kplace::cycle {
namespace {

std::vector<std::string> Names(const std::vector<HostPlugin*>& list) {
  std::vector<std::string> out;
  for (const HostPlugin* p : list) out.push_back(p->name());
  return out;
}

TEST(HostPluginsTest, DefaultProfileListsEachPointInItsOrder) {
  const HostPlugins host = HostPlugins::For(DefaultProfile(), FeatureGates{});
  EXPECT_EQ(Names(host.pre_enqueue()), (std::vector<std::string>{"SchedulingGates", "DynamicResources"}));
  EXPECT_EQ(Names(host.post_filter()), std::vector<std::string>{});  // DefaultPreemption is the cycle's own
  EXPECT_TRUE(host.preempts());
  Profile quiet = DefaultProfile();
  quiet.post_filter.clear();
  EXPECT_FALSE(HostPlugins::For(quiet, FeatureGates{}).preempts());
  Pod pod;
  EXPECT_FALSE(host.WritesAtBind(pod));
  pod.resource_claims.push_back(PodResourceClaim{});
  EXPECT_TRUE(host.WritesAtBind(pod));  // DynamicResources reserves its claims at PreBind
  EXPECT_EQ(MakeHostPlugin("NodeResourcesFit", FeatureGates{}), nullptr);
}

TEST(HostPluginsTest, PreFilterRanUnlessAnEarlierPluginEndedThePass) {
  Profile profile;
  profile.pre_filter = {"NodeAffinity", "DynamicResources", "InterPodAffinity"};
  profile.filter = {"DynamicResources"};
  profile.post_filter = {"DynamicResources", "DefaultPreemption"};
  const HostPlugins host = HostPlugins::For(profile, FeatureGates{});
  ASSERT_EQ(Names(host.post_filter()), (std::vector<std::string>{"DynamicResources"}));
  auto ran = [&](Code code, std::vector<std::string> rejectors) {
    return host.AfterPreFilter(profile, code, rejectors).at(0).pre_filter_ran;
  };
  EXPECT_FALSE(ran(Code::kUnschedulableAndUnresolvable, {"NodeAffinity"}));  // the pass ended before it
  EXPECT_TRUE(ran(Code::kUnschedulableAndUnresolvable, {"DynamicResources"}));
  EXPECT_TRUE(ran(Code::kUnschedulableAndUnresolvable, {"NodeAffinity", "InterPodAffinity"}));  // sets that did not meet
  EXPECT_TRUE(ran(Code::kUnschedulable, {"NodeAffinity"}));  // Unschedulable lets the pass go on
  // SchedulingGates runs first at PreEnqueue even where the profile does not list it.
  EXPECT_EQ(Names(host.pre_enqueue()), (std::vector<std::string>{"SchedulingGates"}));
  EXPECT_TRUE(host.AfterFilter().at(0).pre_filter_ran);
  EXPECT_TRUE(host.AfterFilter().at(0).rejected.empty());

  Profile without = profile;
  without.pre_filter = {"NodeAffinity"};
  EXPECT_FALSE(HostPlugins::For(without, FeatureGates{}).AfterPreFilter(without, Code::kUnschedulable, {}).at(0).pre_filter_ran);
}

}  // namespace
}  // namespace kplace::cycle
