use crate::helpers::{json, spawn_app};

#[tokio::test]
async fn options_answers_the_full_taxonomy() {
    let app = spawn_app().await;
    let partner = app.partner("acme").await;
    let response = app.get("/v1/listings/options", &partner.key).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("x-ratelimit-remaining"));
    let body = json(response).await;

    let strings = |key: &str| -> Vec<String> {
        body[key].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(
        strings("categories"),
        [
            "Corner Sofas",
            "3-Seater Sofas",
            "2-Seater Sofas",
            "Sofa Beds",
            "Armchairs",
            "Footstools",
            "Sofa Sets",
            "Other"
        ]
    );
    assert_eq!(
        strings("item_types"),
        [
            "Corner Sofa",
            "4-Seater",
            "3-Seater",
            "2-Seater",
            "Chair",
            "Sofa Bed",
            "Sofa Set",
            "U-Shape Sofa",
            "Footstool"
        ]
    );
    assert_eq!(strings("colours").len(), 20);
    assert!(strings("colours").contains(&"Mink".to_owned()));
    let fabrics = strings("fabrics");
    assert_eq!(fabrics.len(), 24);
    assert_eq!(fabrics[6], "Bouclé");
    assert_eq!(fabrics.last().unwrap(), "Other");
    let ages = strings("ages");
    assert_eq!(ages.first().unwrap(), "Less than 1 year");
    assert_eq!(ages[1], "1 year old");
    assert_eq!(ages.last().unwrap(), "15+ years old");
    let brands = strings("brands");
    assert_eq!(brands.last().unwrap(), "Other");
    assert!(brands.len() > 1);

    let conditions = body["conditions"].as_array().unwrap();
    let values: Vec<&str> = conditions.iter().map(|c| c["value"].as_str().unwrap()).collect();
    assert_eq!(values, ["like-new", "excellent", "gently-used", "fair"]);
    assert_eq!(conditions[2]["label"], "Gently used");
    assert!(conditions.iter().all(|c| c["help"].is_string()));

    let exposures = body["exposures"].as_array().unwrap();
    assert_eq!(exposures.len(), 4);
    assert_eq!(exposures[3]["value"], "None");
    assert_eq!(exposures[3]["label"], "None of the above");
    let faults = body["faults"].as_array().unwrap();
    assert_eq!(faults[1]["value"], "Fire Label");
    assert_eq!(faults[1]["label"], "Has fire safety label");
}
