/// MQTT topic filter matching (MQTT 5.0 §4.7): `+` matches one level, `#` the rest (including the parent level);
/// filters starting with a wildcard do not match topics starting with `$` (§4.7.2).
public enum TopicMatching {
    public static func matches(filter: String, topic: String) -> Bool {
        let filterLevels = filter.split(separator: "/", omittingEmptySubsequences: false)
        let topicLevels = topic.split(separator: "/", omittingEmptySubsequences: false)
        if topic.hasPrefix("$"), let first = filterLevels.first, first == "+" || first == "#" { return false }
        var index = 0
        while index < filterLevels.count {
            let level = filterLevels[index]
            if level == "#" { return true }
            guard index < topicLevels.count else { return false }
            if level != "+", level != topicLevels[index] { return false }
            index += 1
        }
        return index == topicLevels.count
    }
}
